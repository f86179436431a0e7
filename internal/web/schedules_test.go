package web_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// scheduleFixture is what seedSchedules wrote.
type scheduleFixture struct {
	active, paused string // "Régua <padrão>" and a paused one
	next           calendar.Date
}

// page is the active schedule's page, for the browser tests' page lists (consolePaths).
func (f scheduleFixture) page() namedPath {
	return namedPath{"schedule", web.SchedulePath + "?id=" + f.active}
}

// seedSchedules writes two schedules — "Régua <padrão>" (steps on the due date and 5
// business days after, every open invoice) and a paused one — and 53 more for the list's
// pages, and a ledger whose next business day's batch holds 2 messages and leaves out 1
// invoice (its customer asked not to be contacted).
func seedSchedules(t *testing.T, e *env) scheduleFixture {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	cal := calendar.Brazil()
	var f scheduleFixture
	err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		mk := func(name string, steps []schedules.StepSpec, at time.Time) (schedules.Schedule, error) {
			sp := schedules.Spec{Name: name, Steps: steps, Audience: schedules.Audience{All: true}, EndDate: calendar.DateOf(now, time.UTC).AddDays(60).String()}
			s, fe := sp.Validate(func(loc *time.Location) calendar.Date { return calendar.DateOf(now, loc) })
			if fe != nil {
				return s, fe
			}
			return schedules.Create(ctx, tx, s, schedules.Stamp{By: "ana", Actor: "collector-bot"}, at)
		}
		for i := range 53 {
			if _, err := mk(fmt.Sprintf("Old %02d", i), []schedules.StepSpec{{Offset: 1, Tone: "friendly"}}, now.Add(-time.Duration(100-i)*time.Hour)); err != nil {
				return err
			}
		}
		s, err := mk("Régua <padrão>", []schedules.StepSpec{{Offset: 0, Tone: "friendly"}, {Offset: 5, Tone: "firm", Language: "en"}}, now.Add(-2*time.Minute))
		if err != nil {
			return err
		}
		f.active, f.next = s.ID, cal.AddBusinessDays(s.Today(now), 1)
		p, err := mk("Pausada", []schedules.StepSpec{{Offset: 2, Tone: "firm"}}, now.Add(-time.Minute))
		if err != nil {
			return err
		}
		f.paused = p.ID
		if _, _, err := schedules.SetState(ctx, tx, p, schedules.Paused, schedules.Stamp{By: "ana"}, now); err != nil {
			return err
		}
		for _, c := range []string{"sc-ok", "sc-late", "sc-dnc"} {
			if _, err := customers.Upsert(ctx, tx, customers.Record{ID: c, Name: "Cliente " + c, Email: c + "@example.com"}, now.Add(-time.Hour)); err != nil {
				return err
			}
		}
		if _, err := customers.SetStatus(ctx, tx, "sc-dnc", customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "ana"}, now.Add(-time.Hour)); err != nil {
			return err
		}
		_, err = ledger.UpsertInvoices(ctx, tx, []ledger.InvoiceRecord{
			{InvoiceID: "SC-1", CustomerID: "sc-ok", CustomerName: "Cliente sc-ok", AmountCents: 10000, Currency: "BRL", DueDate: f.next.String()},
			{InvoiceID: "SC-2", CustomerID: "sc-late", CustomerName: "Cliente sc-late", AmountCents: 20000, Currency: "BRL", DueDate: cal.AddBusinessDays(f.next, -8).String()},
			{InvoiceID: "SC-3", CustomerID: "sc-dnc", CustomerName: "Cliente sc-dnc", AmountCents: 30000, Currency: "BRL", DueDate: f.next.String()},
		}, now.Add(-time.Hour))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// batchFixture is what seedBatches wrote: the approvals of the active schedule's batches, by
// the state each reads now.
type batchFixture struct {
	pending, approved, executed, expired, rejected string
	bulk                                           string // the sent batch's bulk send
}

// pendingExpires is when the pending batch's approval expires: 20:30 of 4 March 2099 in São
// Paulo, the schedule's window zone.
var pendingExpires = time.Date(2099, 3, 4, 23, 30, 0, 0, time.UTC)

// seedBatches records 12 batches of f's active schedule, one a day from 2026-11-30 back, as
// its daily job would (schedules.InsertBatch, approvals of the bulk send it asks for): on the
// 30th opened and pending, the 29th approved, the 28th sent (its approval executed), the 27th
// lapsed with its approval expired, the 26th lapsed rejected, the 25th empty, the 24th closed,
// and empty days before. The page shows the 10 latest.
func seedBatches(t *testing.T, e *env, f scheduleFixture) batchFixture {
	t.Helper()
	ctx := context.Background()
	// An approval store whose clock is long past: its pending approvals read expired now.
	past, err := approval.New(15*time.Minute, func() time.Time { return time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC) })
	if err != nil {
		t.Fatal(err)
	}
	var bf batchFixture
	err = e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		ask := func(s *approval.Store, day string, expires time.Time) (string, error) {
			a, err := s.CreateUntil(ctx, tx, collections.BulkSendName, sha256.Sum256([]byte(day)), "Batch of "+day, []string{"sends the batch's e-mails"},
				approval.Requester{Subject: "ana", Client: collections.BatchClient, Actor: f.active}, expires)
			if err != nil {
				return "", err
			}
			return a.ID, nil
		}
		decide := func(id string, approve bool) error {
			_, err := e.approvals.Decide(ctx, tx, id, approve, approval.Approver{Subject: "bruno", ACR: mfa})
			return err
		}
		if bf.pending, err = ask(e.approvals, "2026-11-30", pendingExpires); err != nil {
			return err
		}
		if bf.approved, err = ask(e.approvals, "2026-11-29", pendingExpires); err != nil {
			return err
		}
		if bf.executed, err = ask(e.approvals, "2026-11-28", pendingExpires); err != nil {
			return err
		}
		if bf.expired, err = ask(past, "2026-11-27", time.Time{}); err != nil {
			return err
		}
		if bf.rejected, err = ask(e.approvals, "2026-11-26", pendingExpires); err != nil {
			return err
		}
		for _, d := range []struct {
			id      string
			approve bool
		}{{bf.approved, true}, {bf.executed, true}, {bf.rejected, false}} {
			if err := decide(d.id, d.approve); err != nil {
				return err
			}
		}
		if _, err := e.approvals.Executing(ctx, tx, bf.executed); err != nil {
			return err
		}
		done := e.approvals.MarkExecutedStmt(bf.executed)
		if _, err := tx.Exec(ctx, done.SQL, done.Args...); err != nil {
			return err
		}
		batches := []schedules.Batch{
			{Date: "2026-11-30", Outcome: schedules.BatchOpened, ApprovalID: bf.pending, Drafts: 3, Recipients: 2,
				Skipped: schedules.BatchSkips{Plan: schedules.Skips{Paid: 2}, Bulk: map[string]int{"doNotContact": 1, "settled": 0}}},
			{Date: "2026-11-29", Outcome: schedules.BatchOpened, ApprovalID: bf.approved, Drafts: 1, Recipients: 1},
			{Date: "2026-11-28", Outcome: schedules.BatchOpened, ApprovalID: bf.executed, Drafts: 4, Recipients: 4},
			{Date: "2026-11-27", Outcome: schedules.BatchLapsed, ApprovalID: bf.expired, Drafts: 1, Recipients: 1},
			{Date: "2026-11-26", Outcome: schedules.BatchLapsed, ApprovalID: bf.rejected, Drafts: 2, Recipients: 2},
			{Date: "2026-11-25", Outcome: schedules.BatchEmpty, Skipped: schedules.BatchSkips{Plan: schedules.Skips{NoContact: 4}}},
			{Date: "2026-11-24", Outcome: schedules.BatchClosed},
		}
		for d := 23; d >= 19; d-- {
			batches = append(batches, schedules.Batch{Date: fmt.Sprintf("2026-11-%02d", d), Outcome: schedules.BatchEmpty})
		}
		for _, b := range batches {
			day, err := time.Parse(time.DateOnly, b.Date)
			if err != nil {
				return err
			}
			// Made at 08:00 in São Paulo, when the window opens.
			b.ScheduleID, b.CreatedAt = f.active, day.Add(11*time.Hour)
			if err := schedules.InsertBatch(ctx, tx, b); err != nil {
				return err
			}
		}
		bf.bulk = "bulk_" + strings.Repeat("b", 26)
		return schedules.MarkBatchSent(ctx, tx, f.active, "2026-11-28", bf.bulk, map[string]int{"settled": 1, "stale": 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	return bf
}

// TestConsoleSchedules: the schedules pages, on both stores.
func TestConsoleSchedules(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		f := seedSchedules(t, e)
		bf := seedBatches(t, e, f)
		t.Run("list", func(t *testing.T) { schedulesList(t, e, f) })
		t.Run("batches", func(t *testing.T) { schedulesBatches(t, e, f, bf) })
		t.Run("bad parameters", func(t *testing.T) { schedulesBadParameters(t, e, f) })
		t.Run("viewer", func(t *testing.T) { schedulesViewer(t, e, f) })
		t.Run("languages", func(t *testing.T) { schedulesLanguages(t, e, f) })
		t.Run("agent", func(t *testing.T) { schedulesAgent(t, e, f) })
		t.Run("pause and resume", func(t *testing.T) { schedulesPauseResume(t, e, f) })
	})
}

var scheduleRowRE = regexp.MustCompile(`<a href="/console/schedules/detail\?id=(sch_[^"&]*)[^"]*">`)

func scheduleRows(body string) []string {
	var out []string
	for _, m := range scheduleRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

var nextLinkRE = regexp.MustCompile(`<a href="([^"]*)" rel="next">`)

// schedulesList: newest first, 50 a page with a link to the next; the state filter.
func schedulesList(t *testing.T, e *env, f scheduleFixture) {
	b := e.browser(t)
	p := b.open(t, web.SchedulesPath, viewer)
	rows := scheduleRows(p.body)
	if p.resp.StatusCode != http.StatusOK || len(rows) != 50 || rows[0] != f.paused || rows[1] != f.active ||
		!strings.Contains(p.body, `aria-current="page">Schedules</a>`) {
		t.Fatalf("the schedules page = %d with %d rows starting %v, want 200, 50 rows, the paused then the active one first, current in the navigation:\n%s",
			p.resp.StatusCode, len(rows), rows[:min(2, len(rows))], p.body)
	}
	if strings.Contains(p.body, "Régua <padrão>") || !strings.Contains(p.body, "Régua &lt;padrão&gt;") {
		t.Errorf("the schedule's name is not escaped:\n%s", p.body)
	}
	m := nextLinkRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no next page link:\n%s", p.body)
	}
	second := scheduleRows(b.get(t, html.UnescapeString(m[1])).body)
	if len(second) != 5 {
		t.Errorf("the second page lists %d schedules, want 5", len(second))
	}
	for _, id := range second {
		if strings.Contains(strings.Join(rows, " "), id) {
			t.Errorf("%s is on both pages", id)
		}
	}
	paused := scheduleRows(b.get(t, web.SchedulesPath+"?state=paused").body)
	if strings.Join(paused, " ") != f.paused {
		t.Errorf("the paused schedules = %v, want [%s]", paused, f.paused)
	}
	if strings.Contains(p.body, "/console/schedules/detail</a>") {
		t.Errorf("a schedule's page is in the navigation:\n%s", p.body)
	}
}

func schedulesBadParameters(t *testing.T, e *env, f scheduleFixture) {
	b := e.browser(t)
	b.open(t, web.SchedulesPath, viewer)
	for _, c := range []struct{ path, field string }{
		{web.SchedulesPath + "?state=stopped", "state"},
		{web.SchedulesPath + "?after=12.sch_x", "after"},
		{web.SchedulesPath + "?after=now", "after"},
		{web.SchedulePath, "id"},
		{web.SchedulePath + "?id=NF-A1", "id"},
		{web.SchedulePath + "?id=" + f.active + "&preview=all", "preview"},
	} {
		for lang, headline := range map[string]string{"en": "A field is not valid", "pt-BR": "Um campo não é válido"} {
			sep := "?"
			if strings.Contains(c.path, "?") {
				sep = "&"
			}
			p := b.get(t, c.path+sep+"lang="+lang)
			refused(t, c.path+" in "+lang, p, http.StatusBadRequest, string(failure.InvalidArguments))
			if !strings.Contains(p.body, string(failure.InvalidArguments)+": "+c.field+": ") || !strings.Contains(p.body, headline) {
				t.Errorf("%s in %s does not name the field %s under %q:\n%s", c.path, lang, c.field, headline, p.body)
			}
		}
	}
	p := b.get(t, web.SchedulePath+"?id=sch_"+strings.Repeat("a", 26))
	refused(t, "an unknown schedule", p, http.StatusNotFound, "not_found")
	if !strings.Contains(p.body, "not_found: id: ") {
		t.Errorf("an unknown schedule does not name the field id:\n%s", p.body)
	}
}

// scheduleState is the schedule's state in the store.
func scheduleState(t *testing.T, e *env, id string) schedules.Schedule {
	t.Helper()
	s, err := schedules.Get(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// schedulesViewer: the viewer reads a schedule in words, its next batch (counts, the skip
// by reason, the samples), and no form; forms she builds are refused (403), audited, and
// change nothing.
func schedulesViewer(t *testing.T, e *env, f scheduleFixture) {
	b := e.browser(t)
	// The page computes no plan unless asked: it links the preview.
	p := b.open(t, web.SchedulePath+"?id="+f.active, viewer)
	if strings.Contains(p.body, `id="plan-messages"`) || !strings.Contains(p.body, `<a href="/console/schedules/detail?id=`+f.active+`&amp;preview=next" id="preview-next">Preview the next batch</a>`) {
		t.Errorf("the schedule page without ?preview shows a plan or no link to it:\n%s", p.body)
	}
	p = b.get(t, web.SchedulePath+"?id="+f.active+"&preview=next")
	for _, want := range []string{
		"Régua &lt;padrão&gt;", `id="schedule-state">active</span>`,
		"on the due date (the next business day when it is not one)", "5 business days after the due date",
		"friendly", "firm", "Portuguese (Brazil)", "<code>pt-BR.friendly</code>", "<code>en.firm</code>",
		"Every open invoice", "At most 2 messages to a customer in any 7 days", "At most 10,000 messages in a batch",
		"08:00 to 20:00, Monday to Saturday, in America/Sao_Paulo time; never on a bank holiday",
		`id="stamp-created">ana (through the agent <code>collector-bot</code>)`, `id="stamp-paused">never</dd>`,
		"What the batch of " + f.next.String() + " would prepare",
		`id="plan-messages">2</dd>`, `id="plan-invoices">2</dd>`, `id="plan-skipped">1</dd>`,
		"customer asked not to be contacted", "<code>SC-1</code>", "<code>SC-2</code>", "Cliente sc-ok",
		"Pausing a schedule needs the operator or approver role; resuming it, the approver role.",
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the viewer's schedule page does not show %q:\n%s", want, p.body)
		}
	}
	if p.resp.StatusCode != http.StatusOK || strings.Contains(p.body, `name="scheduleId"`) || strings.Count(p.body, "<form") != 1 {
		t.Errorf("the viewer's schedule page = %d, offers a form (want only the sign-out form):\n%s", p.resp.StatusCode, p.body)
	}
	if strings.Contains(p.body, "<code>SC-3</code>") {
		t.Errorf("the do-not-contact customer's invoice is in the batch:\n%s", p.body)
	}
	csrf := html.UnescapeString(csrfRE.FindStringSubmatch(p.body)[1])
	refusedBefore := refusalsAudited(t, e, web.SchedulePausePath, web.CodePauseRole)
	forged := b.do(t, http.MethodPost, web.SchedulePausePath, url.Values{"csrf": {csrf}, "scheduleId": {f.active}, "idempotencyKey": {"form_forged"}}, b.sameSite())
	refused(t, "the viewer's forged pause", forged, http.StatusForbidden, string(web.CodePauseRole))
	forged = b.do(t, http.MethodPost, web.ScheduleResumePath, url.Values{"csrf": {csrf}, "scheduleId": {f.paused}, "confirm": {"yes"}, "idempotencyKey": {"form_forged2"}}, b.sameSite())
	refused(t, "the viewer's forged resume", forged, http.StatusForbidden, string(web.CodeResumeRole))
	if s := scheduleState(t, e, f.active); s.State != schedules.Active || s.Revision != 1 {
		t.Errorf("after the viewer's forged pause the schedule is %s (revision %d), want active, untouched", s.State, s.Revision)
	}
	if s := scheduleState(t, e, f.paused); s.State != schedules.Paused {
		t.Errorf("after the viewer's forged resume the schedule is %s, want paused", s.State)
	}
	if n := refusalsAudited(t, e, web.SchedulePausePath, web.CodePauseRole); n != refusedBefore+1 {
		t.Errorf("the forged pause's refusal audited %d times, want once", n-refusedBefore)
	}
	// Without the CSRF token, the form is refused before anything.
	refused(t, "a pause without its CSRF token", b.do(t, http.MethodPost, web.SchedulePausePath, url.Values{"scheduleId": {f.active}}, b.sameSite()),
		http.StatusForbidden, "csrf_token_invalid")
}

// refusalsAudited counts the audited refusals of the form at path with code.
func refusalsAudited(t *testing.T, e *env, path string, code failure.Code) int {
	t.Helper()
	e.refusals.Flush(context.Background())
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND tool = $2 AND failure_code = $3 AND outcome = $4`,
		web.EventConsoleRefused, "POST "+path, string(code), string(auditlog.Denied)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// schedulesLanguages: the schedule in Brazilian Portuguese's words.
func schedulesLanguages(t *testing.T, e *env, f scheduleFixture) {
	b := e.browser(t)
	p := b.open(t, web.SchedulePath+"?id="+f.paused+"&lang=pt-BR", viewer)
	if !strings.Contains(p.body, `&amp;preview=next" id="preview-next">Prever o próximo lote</a>`) {
		t.Errorf("the schedule page in Portuguese does not link the preview:\n%s", p.body)
	}
	p = b.get(t, web.SchedulePath+"?id="+f.paused+"&lang=pt-BR&preview=next")
	for _, want := range []string{
		`<html lang="pt-BR"`, `id="schedule-state">pausada</span>`, "2 dias úteis depois do vencimento", "firme",
		"das 08:00 às 20:00, de segunda a sábado, no fuso America/Sao_Paulo; nunca em feriado bancário",
		"Todos os títulos em aberto", "No máximo 10.000 mensagens por lote", `id="stamp-paused">ana · <time`,
		"A régua está pausada: isto é o que o lote dela prepararia se fosse retomada agora.",
		`href="/console/schedules?lang=pt-BR">Voltar às réguas</a>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the schedule page in Portuguese does not show %q:\n%s", want, p.body)
		}
	}
	l := b.get(t, web.SchedulesPath+"?lang=pt-BR")
	if !strings.Contains(l.body, "Réguas de cobrança, as mais recentes primeiro") || !strings.Contains(l.body, ">pausada</span>") {
		t.Errorf("the schedules page in Portuguese:\n%s", l.body)
	}
}

// schedulesAgent: an agent's session sees nothing of the pages, and its forms are refused.
func schedulesAgent(t *testing.T, e *env, f scheduleFixture) {
	for _, path := range []string{web.SchedulesPath, web.SchedulePath + "?id=" + f.active} {
		bot := e.browser(t).open(t, path, agent("collector-bot"))
		refused(t, "an agent on "+path, bot, http.StatusForbidden, string(web.CodeConsoleAgent))
		if strings.Contains(bot.body, "padrão") {
			t.Errorf("the agent's refusal on %s shows the schedule:\n%s", path, bot.body)
		}
		refused(t, "a person without a console role on "+path, e.browser(t).open(t, path, person("edu", mfa)), http.StatusForbidden, string(web.CodeConsoleRole))
	}
	bot := e.browser(t)
	bot.open(t, web.SchedulesPath, agent("collector-bot"))
	botCSRF := html.UnescapeString(csrfRE.FindStringSubmatch(bot.get(t, "/approvals/"+e.ask(t, tool).ID).body)[1])
	refused(t, "an agent's pause", bot.do(t, http.MethodPost, web.SchedulePausePath, url.Values{"csrf": {botCSRF}, "scheduleId": {f.active},
		"idempotencyKey": {"form_bot"}}, bot.sameSite()), http.StatusForbidden, string(web.CodeConsoleAgent))
	if s := scheduleState(t, e, f.active); s.State != schedules.Active {
		t.Errorf("after the agent's pause the schedule is %s, want active", s.State)
	}
}

var scheduleFormRE = regexp.MustCompile(`(?s)<form method="post" action="([^"]*)">(.*?)</form>`)

// scheduleForms are the pause and resume forms of a page, by action path.
func scheduleForms(body string) map[string]url.Values {
	out := map[string]url.Values{}
	for _, m := range scheduleFormRE.FindAllStringSubmatch(body, -1) {
		v := url.Values{}
		for _, h := range hiddenRE.FindAllStringSubmatch(m[2], -1) {
			v.Set(h[1], html.UnescapeString(h[2]))
		}
		if v.Get("scheduleId") != "" {
			path, _, _ := strings.Cut(html.UnescapeString(m[1]), "?")
			out[path] = v
		}
	}
	return out
}

// schedulesPauseResume: the operator pauses through the pipeline (audited as the tool), and
// may not resume; the approver resumes only once confirmed.
func schedulesPauseResume(t *testing.T, e *env, f scheduleFixture) {
	ob := e.browser(t)
	p := ob.open(t, web.SchedulePath+"?id="+f.active, operator)
	forms := scheduleForms(p.body)
	pause, ok := forms[web.SchedulePausePath]
	if !ok || len(forms) != 1 || pause.Get("scheduleId") != f.active || pause.Get("idempotencyKey") == "" {
		t.Fatalf("the operator's page offers %v, want the pause form only:\n%s", forms, p.body)
	}
	paused := e.audited(t, "collections.schedule.paused", auditlog.Allowed)
	done := ob.do(t, http.MethodPost, web.SchedulePausePath, pause, ob.sameSite())
	if done.resp.StatusCode != http.StatusSeeOther || done.location() != web.SchedulePath+"?id="+f.active {
		t.Fatalf("the pause = %d to %q, want 303 to the schedule:\n%s", done.resp.StatusCode, done.location(), done.body)
	}
	s := scheduleState(t, e, f.active)
	if s.State != schedules.Paused || s.Paused.By != "otto" || s.Paused.Actor != "" {
		t.Errorf("after the operator's pause the schedule is %s paused by %q (%q), want paused by otto", s.State, s.Paused.By, s.Paused.Actor)
	}
	if n := e.audited(t, "collections.schedule.paused", auditlog.Allowed); n != paused+1 {
		t.Errorf("the pause was audited %d times, want once", n-paused)
	}
	after := ob.follow(t, done, nil)
	if !strings.Contains(after.body, `id="schedule-state">paused</span>`) || !strings.Contains(after.body, `id="stamp-paused">otto · <time`) ||
		!strings.Contains(after.body, "Resuming needs the approver role") || len(scheduleForms(after.body)) != 0 {
		t.Errorf("the schedule after the pause, to the operator:\n%s", after.body)
	}
	// A resume the operator builds is refused: resuming is the approver's.
	csrf := html.UnescapeString(csrfRE.FindStringSubmatch(after.body)[1])
	refused(t, "the operator's resume", ob.do(t, http.MethodPost, web.ScheduleResumePath, url.Values{"csrf": {csrf}, "scheduleId": {f.active},
		"confirm": {"yes"}, "idempotencyKey": {"form_otto"}}, ob.sameSite()), http.StatusForbidden, string(web.CodeResumeRole))
	if s := scheduleState(t, e, f.active); s.State != schedules.Paused {
		t.Errorf("after the operator's resume the schedule is %s, want paused", s.State)
	}

	ab := e.browser(t)
	// The resume form comes only under the preview it confirms.
	p = ab.open(t, web.SchedulePath+"?id="+f.active+"&lang=en", approver)
	if len(scheduleForms(p.body)) != 0 || !strings.Contains(p.body, "To resume the schedule, preview its next batch first") {
		t.Fatalf("the approver's page of the paused schedule without the preview offers %v, want none and the preview's link:\n%s", scheduleForms(p.body), p.body)
	}
	p = ab.get(t, web.SchedulePath+"?id="+f.active+"&lang=en&preview=next")
	forms = scheduleForms(p.body)
	resume, ok := forms[web.ScheduleResumePath]
	if !ok || len(forms) != 1 || !strings.Contains(p.body, `<input type="checkbox" name="confirm" value="yes" required>`) ||
		!strings.Contains(p.body, `action="/console/schedules/resume?lang=en"`) || !strings.Contains(p.body, `id="plan-messages">2</dd>`) {
		t.Fatalf("the approver's page of the paused schedule offers %v, want the resume form with its confirmation, under the batch it would prepare:\n%s", forms, p.body)
	}
	resumed := e.audited(t, "collections.schedule.resumed", auditlog.Allowed)
	unconfirmed := ab.do(t, http.MethodPost, web.ScheduleResumePath, resume, ab.sameSite())
	refused(t, "a resume not confirmed", unconfirmed, http.StatusBadRequest, string(failure.InvalidArguments))
	if !strings.Contains(unconfirmed.body, "invalid_arguments: confirm: ") || !strings.Contains(unconfirmed.body, `href="/console/schedules/detail?id=`+f.active+`"`) {
		t.Errorf("the unconfirmed resume does not name confirm and lead back to the schedule:\n%s", unconfirmed.body)
	}
	if s := scheduleState(t, e, f.active); s.State != schedules.Paused || e.audited(t, "collections.schedule.resumed", auditlog.Allowed) != resumed {
		t.Errorf("after an unconfirmed resume the schedule is %s, want paused and nothing audited", s.State)
	}
	resume.Set("confirm", "yes")
	done = ab.do(t, http.MethodPost, web.ScheduleResumePath+"?lang=en", resume, ab.sameSite())
	if done.resp.StatusCode != http.StatusSeeOther || done.location() != web.SchedulePath+"?id="+f.active+"&lang=en" {
		t.Fatalf("the resume = %d to %q, want 303 to the schedule:\n%s", done.resp.StatusCode, done.location(), done.body)
	}
	s = scheduleState(t, e, f.active)
	if s.State != schedules.Active || s.Resumed.By != "bruno" {
		t.Errorf("after the approver's resume the schedule is %s resumed by %q, want active, by bruno", s.State, s.Resumed.By)
	}
	if n := e.audited(t, "collections.schedule.resumed", auditlog.Allowed); n != resumed+1 {
		t.Errorf("the resume was audited %d times, want once", n-resumed)
	}
	// The approver may pause too: the page offers it now.
	if forms := scheduleForms(ab.follow(t, done, nil).body); len(forms) != 1 || forms[web.SchedulePausePath] == nil {
		t.Errorf("the approver's page of the active schedule offers %v, want the pause form", forms)
	}
	// A pause of an unknown schedule, sent by hand, is the tool's refusal, naming the field.
	pause.Set("scheduleId", "sch_"+strings.Repeat("a", 26))
	pause.Set("idempotencyKey", "form_unknown")
	unknown := ob.do(t, http.MethodPost, web.SchedulePausePath, pause, ob.sameSite())
	refused(t, "a pause of an unknown schedule", unknown, http.StatusUnprocessableEntity, string(schedules.CodeNotFound))
	if !strings.Contains(unknown.body, "schedule_not_found: scheduleId: ") {
		t.Errorf("the unknown schedule's refusal does not name scheduleId:\n%s", unknown.body)
	}
}

var batchRowRE = regexp.MustCompile(`(?s)<tr id="batch-([0-9-]+)">(.*?)</tr>`)

// batchRows are the batches a schedule page shows: each row's HTML by its day, and the days
// in the page's order.
func batchRows(body string) (map[string]string, []string) {
	rows := map[string]string{}
	var days []string
	for _, m := range batchRowRE.FindAllStringSubmatch(body, -1) {
		rows[m[1]] = m[2]
		days = append(days, m[1])
	}
	return rows, days
}

// schedulesBatches: the schedule's 10 latest batches, newest first, each with its outcome,
// its approval's state now linking the approval (a pending one's expiry in the window's
// zone), its counts, its bulk send and its skips by reason, in both languages; a schedule
// without a batch says so.
func schedulesBatches(t *testing.T, e *env, f scheduleFixture, bf batchFixture) {
	b := e.browser(t)
	b.open(t, web.SchedulesPath, viewer)
	for _, c := range []struct {
		lang, heading, caption, none string
		rows                         map[string][]string
	}{
		{"en", `<h2 id="batches">Latest batches</h2>`, "<caption>The schedule&#39;s batches, the newest first (its latest 10 at most), with their approvals</caption>",
			"No batch yet", map[string][]string{
				"2026-11-30": {`<time datetime="2026-11-30">2026-11-30</time>`, `<time datetime="2026-11-30T11:00:00Z">2026-11-30 08:00 -03</time>`,
					"prepared: its bulk send waits for approval", `<a href="/approvals/` + bf.pending + `"><span class="state-pending">waiting for a decision</span>`,
					"<small>approve before 2099-03-04 20:30 -03</small>", `<td data-label="Recipients" class="num">2</td>`, `<td data-label="Drafts" class="num">3</td>`,
					`<td data-label="Bulk send">—</td>`, "<small>Invoices left out of the plan:</small> paid (2)<br>",
					"<small>Drafts prepared but not sendable:</small> the customer asked not to be contacted (1)<br>"},
				"2026-11-29": {"prepared: its bulk send waits for approval", `<a href="/approvals/` + bf.approved + `"><span class="state-approved">approved: sent as soon as the send window is open</span>`,
					`<td data-label="Left out">nothing</td>`},
				"2026-11-28": {"prepared and sent", `<a href="/approvals/` + bf.executed + `"><span class="state-executed">approved and sent</span>`,
					`<td data-label="Bulk send"><code>` + bf.bulk + `</code></td>`, `<td data-label="Recipients" class="num">4</td>`,
					"<small>Drafts left out at sending because:</small> an invoice was disputed, promised or owed another amount (2), an invoice was paid, void or written off (1)</td>"},
				"2026-11-27": {"lapsed: its drafts discarded, nothing sent", `<a href="/approvals/` + bf.expired + `"><span class="state-expired">expired</span>`},
				"2026-11-26": {"lapsed: its drafts discarded, nothing sent", `<a href="/approvals/` + bf.rejected + `"><span class="state-rejected">rejected</span>`},
				"2026-11-25": {"nothing to send: no approval asked", `<td data-label="Approval">none asked</td>`, "<small>Invoices left out of the plan:</small> no customer record to write to (4)<br>"},
				"2026-11-24": {"nothing prepared: the schedule was paused or past its end date", `<td data-label="Approval">none asked</td>`},
			}},
		{"pt-BR", `<h2 id="batches">Últimos lotes</h2>`, "<caption>Os lotes da régua, os mais recentes primeiro (os últimos 10 no máximo), com as suas aprovações</caption>",
			"Nenhum lote ainda", map[string][]string{
				"2026-11-30": {`<time datetime="2026-11-30">30/11/2026</time>`, `<time datetime="2026-11-30T11:00:00Z">30/11/2026 08:00</time>`,
					"preparado: o envio em lote aguarda aprovação", `<a href="/approvals/` + bf.pending + `?lang=pt-BR"><span class="state-pending">aguardando decisão</span>`,
					"<small>aprovar até 04/03/2099 20:30</small>", `<td data-label="Destinatários" class="num">2</td>`,
					"<small>Títulos deixados fora do plano:</small> pago (2)<br>",
					"<small>Rascunhos preparados mas não enviáveis:</small> o cliente pediu para não ser contatado (1)<br>"},
				"2026-11-29": {`<span class="state-approved">aprovada: enviada assim que a janela de envio estiver aberta</span>`, `<td data-label="Deixados de fora">nada</td>`},
				"2026-11-28": {"preparado e enviado", `<span class="state-executed">aprovada e enviada</span>`,
					"<small>Rascunhos deixados de fora no envio porque:</small> um título foi contestado, teve promessa de pagamento ou passou a dever outro valor (2), um título foi pago, cancelado ou baixado (1)</td>"},
				"2026-11-27": {"caducou: rascunhos descartados, nada enviado", `<span class="state-expired">expirada</span>`},
				"2026-11-26": {"caducou: rascunhos descartados, nada enviado", `<span class="state-rejected">rejeitada</span>`},
				"2026-11-25": {"nada a enviar: nenhuma aprovação pedida", `<td data-label="Aprovação">nenhuma pedida</td>`, "sem cadastro do cliente para escrever (4)"},
				"2026-11-24": {"nada preparado: a régua estava pausada ou depois do fim"},
			}},
	} {
		p := b.get(t, web.SchedulePath+"?id="+f.active+"&lang="+c.lang)
		rows, days := batchRows(p.body)
		want := []string{"2026-11-30", "2026-11-29", "2026-11-28", "2026-11-27", "2026-11-26", "2026-11-25", "2026-11-24", "2026-11-23", "2026-11-22", "2026-11-21"}
		if p.resp.StatusCode != http.StatusOK || !slices.Equal(days, want) {
			t.Fatalf("the schedule page in %s = %d with the batches %v, want 200 and %v:\n%s", c.lang, p.resp.StatusCode, days, want, p.body)
		}
		if !strings.Contains(p.body, c.heading) || !strings.Contains(p.body, c.caption) {
			t.Errorf("the schedule page in %s has no heading %q or caption %q:\n%s", c.lang, c.heading, c.caption, p.body)
		}
		for day, words := range c.rows {
			for _, w := range words {
				if !strings.Contains(rows[day], w) {
					t.Errorf("the batch of %s in %s does not show %q:\n%s", day, c.lang, w, rows[day])
				}
			}
			// Only a pending approval says when it expires.
			if before := strings.Contains(rows[day], "2099"); before != (day == "2026-11-30") {
				t.Errorf("the batch of %s in %s shows an expiry: %v, want %v:\n%s", day, c.lang, before, day == "2026-11-30", rows[day])
			}
		}
		if p := b.get(t, web.SchedulePath+"?id="+f.paused+"&lang="+c.lang); strings.Contains(p.body, `<tr id="batch-`) || !strings.Contains(p.body, c.none) {
			t.Errorf("the page of a schedule without a batch, in %s, does not say it has none:\n%s", c.lang, p.body)
		}
	}
	// The approval's link leads to it.
	if ap := b.get(t, "/approvals/"+bf.pending); ap.resp.StatusCode != http.StatusOK || !strings.Contains(ap.body, "<code>"+collections.BulkSendName+"</code>") {
		t.Errorf("the pending batch's approval page = %d:\n%s", ap.resp.StatusCode, ap.body)
	}
}
