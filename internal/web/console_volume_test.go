package web_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
	"github.com/cobranca/cobranca/internal/web"
)

// Every console page over a store of scale on PostgreSQL (issue 29: every page under 50 ms of
// server time with 1 000 000 invoices and 100 000 audit events; docs/benchmarks.md, "Every
// console page at scale"): storetest.ConsoleVolume's store, the console's real handler, a
// person signed in with every console role.

// volumePage is one console page: its name in the benchmark, and its path and query.
type volumePage struct{ name, path string }

// volumeConsole is the console over ConsoleVolume's store.
type volumeConsole struct {
	e  *env
	db store.DB // the store itself, for EXPLAIN
	// rec records what the pages run (nil: not recorded).
	rec *storetest.Recorder
	// cookies are the signed-in session's.
	cookies []*http.Cookie
	pages   []volumePage
}

// pendingShown is how many approvals wait in the store of scale: more than the inbox's page.
const pendingShown = 60

// newVolumeConsole starts the console over a copy of ConsoleVolume's store, the statements
// it runs recorded when record.
func newVolumeConsole(tb testing.TB, record bool) *volumeConsole {
	tb.Helper()
	ctx := context.Background()
	// Sealed, as the sealer keeps them: the trail's pages read the chain's lag, which walks
	// the events not sealed yet.
	db := storetest.ConsoleVolume(tb, pg, storetest.Step{Name: "audit events sealed with testAuditKey " + string(testAuditKey),
		Run: func(ctx context.Context, db store.DB) error {
			l, err := auditlog.New(db, testAuditKey, auditlog.Options{})
			if err != nil {
				return err
			}
			_, err = l.SealCommitted(ctx)
			return err
		}})
	var served store.DB = db
	var rec *storetest.Recorder
	if record {
		rec = storetest.Record(db)
		served = rec
	}
	e := newEnv(tb, served, false)
	// The console's now: just after the store's week of audit events, days after its payments.
	e.clock.Advance(storetest.ConsoleEnd.Add(time.Minute).Sub(e.clock.Now()))
	for i := range pendingShown {
		if _, err := e.approvals.Create(ctx, db, collections.SendReminderName, sha256.Sum256([]byte(fmt.Sprint(i))), preview,
			[]string{"sends one e-mail to the customer"}, approval.Requester{Subject: "ana", Client: "collector-bot", Actor: "collector-bot"}); err != nil {
			tb.Fatal(err)
		}
	}
	schedule := seedVolumeSchedules(tb, e, db)
	b := e.browser(tb)
	if p := b.open(tb, web.ConsolePath, personWith("olga", mfa, web.RoleViewer, web.RoleOperator, web.RoleApprover)); p.resp.StatusCode != http.StatusOK {
		tb.Fatalf("the inbox after signing in = %d:\n%s", p.resp.StatusCode, p.body)
	}
	v := &volumeConsole{e: e, db: db, rec: rec, cookies: b.c.Jar.Cookies(mustParse(tb, e.base))}
	v.pages = v.volumePages(tb, schedule)
	// The health page's ledger charts were read when the pages started, of another day: read
	// them again, as of now, before any page is timed (a page never waits for them).
	freshCharts(tb, e, func() string { return v.get(tb, web.HealthPath).Body.String() })
	return v
}

// Collection schedules of the store of scale: volumeSchedules schedules of volumeBatchDays
// daily batches each.
const (
	volumeSchedules  = 60
	volumeBatchDays  = 500
	volumeBatchesNew = "2026-06-15" // the latest batch's day
)

// seedVolumeSchedules writes volumeSchedules schedules and their batches (empty ones, the
// latest 10 of the last schedule opened, each with a pending approval) into the copy of the
// store of scale, and returns the last schedule's id: the schedule page's.
func seedVolumeSchedules(tb testing.TB, e *env, db store.DB) string {
	tb.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	var id string
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		for i := range volumeSchedules {
			sp := schedules.Spec{Name: fmt.Sprintf("Régua %02d", i), Steps: []schedules.StepSpec{{Offset: 1, Tone: "friendly"}},
				Audience: schedules.Audience{All: true}, EndDate: calendar.DateOf(now, time.UTC).AddDays(60).String()}
			sc, fe := sp.Validate(func(loc *time.Location) calendar.Date { return calendar.DateOf(now, loc) })
			if fe != nil {
				return fe
			}
			made, err := schedules.Create(ctx, tx, sc, schedules.Stamp{By: "ana"}, now.Add(time.Duration(i-volumeSchedules)*time.Hour))
			if err != nil {
				return err
			}
			id = made.ID
		}
		// Every schedule's days but the page's latest 10, straight in SQL, as the fills write.
		if _, err := tx.Exec(ctx, `INSERT INTO schedule_batch (schedule_id, batch_date, outcome, drafts, recipients, skipped, created_at)
SELECT s.id, to_char(date '`+volumeBatchesNew+`' - d, 'YYYY-MM-DD'), 'empty', 0, 0, '{"plan":{"paid":1},"bulk":{}}', 0
FROM schedule s, generate_series(0, $1::int - 1) d WHERE s.id <> $2 OR d >= $3`, volumeBatchDays, id, schedules.LatestShown); err != nil {
			return err
		}
		day, err := time.Parse(time.DateOnly, volumeBatchesNew)
		if err != nil {
			return err
		}
		for d := range schedules.LatestShown {
			date := day.AddDate(0, 0, -d)
			a, err := e.approvals.Create(ctx, tx, collections.BulkSendName, sha256.Sum256([]byte(date.String())), preview, []string{"sends the batch"},
				approval.Requester{Subject: "ana", Client: collections.BatchClient, Actor: id})
			if err != nil {
				return err
			}
			if err := schedules.InsertBatch(ctx, tx, schedules.Batch{ScheduleID: id, Date: date.Format(time.DateOnly), Outcome: schedules.BatchOpened,
				ApprovalID: a.ID, Drafts: 100, Recipients: 90, CreatedAt: date.Add(11 * time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	// As autovacuum would, before any page reads them.
	if _, err := db.Exec(ctx, `ANALYZE schedule, schedule_batch, approval`); err != nil {
		tb.Fatal(err)
	}
	return id
}

var nextRE = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)

// volumePages are the pages: each list's first page and a deep one (its middle, where the
// store has one), with each filter.
func (v *volumeConsole) volumePages(tb testing.TB, schedule string) []volumePage {
	tb.Helper()
	ctx := context.Background()
	row := func(sql string, args []any, dest ...any) {
		tb.Helper()
		if err := v.db.QueryRow(ctx, sql, args...).Scan(dest...); err != nil {
			tb.Fatalf("%s: %v", sql, err)
		}
	}
	// The ledger's middle (by due date, the list's order): a place in every filter's list.
	var midInvoice string
	row(`SELECT id FROM ledger_invoice ORDER BY due_date, id LIMIT 1 OFFSET $1`, []any{storetest.ConsoleInvoices / 2}, &midInvoice)
	inv, err := ledger.GetInvoice(ctx, v.db, midInvoice)
	if err != nil {
		tb.Fatal(err)
	}
	invDeep := ledger.InvoiceCursor(inv)
	var midPayment string
	row(`SELECT id FROM ledger_payment WHERE left_cents > 0 ORDER BY created_at, id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM ledger_payment WHERE left_cents > 0)`, nil, &midPayment)
	pay, err := ledger.GetPayment(ctx, v.db, midPayment)
	if err != nil {
		tb.Fatal(err)
	}
	var eventID int64
	var occurred time.Time
	row(`SELECT id, occurred_at FROM audit_event ORDER BY occurred_at, id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM audit_event)`, nil, &eventID, &occurred)
	trailDeep := auditlog.TrailCursor(occurred, eventID)
	outboxDeep := map[string]string{}
	for _, state := range []string{"queued", "sent", "undeliverable"} {
		var at int64
		var id string
		row(`SELECT queued_at, id FROM reminder_draft WHERE state = $1 AND queued_at IS NOT NULL ORDER BY queued_at DESC, id DESC
 LIMIT 1 OFFSET (SELECT count(*) / 2 FROM reminder_draft WHERE state = $1)`, []any{state}, &at, &id)
		outboxDeep[state] = web.FormatPosition(at, id)
	}
	var bulkAt int64
	var bulkID string
	row(`SELECT created_at, id FROM bulk_send ORDER BY created_at DESC, id DESC LIMIT 1 OFFSET $1`, []any{storetest.ConsoleBulks / 2}, &bulkAt, &bulkID)
	// The inbox's second page: its own link.
	inboxNext := nextRE.FindStringSubmatch(v.get(tb, web.ConsolePath).Body.String())
	if inboxNext == nil {
		tb.Fatalf("the inbox of %d approvals has no next page", pendingShown)
	}
	day := storetest.ConsoleEnd.In(time.FixedZone("BRT", -3*60*60)).AddDate(0, 0, -3)
	since, until := day.Format(time.DateOnly), day.AddDate(0, 0, 1).Format(time.DateOnly)

	pages := []volumePage{
		{"inbox", web.ConsolePath},
		{"inbox_next", html.UnescapeString(inboxNext[1])},
		{"tools", web.ToolsPath},
		{"health", web.HealthPath},
		{"invoice", web.InvoicePath + "?id=" + midInvoice},
		{"payments", web.PaymentsPath},
		{"payments_deep", web.PaymentsPath + "?" + url.Values{"after": {ledger.PaymentCursor(pay)}}.Encode()},
		{"payment", web.PaymentPath + "?" + url.Values{"id": {midPayment}}.Encode()},
		{"customers", web.CustomersPath},
		{"customers_deep", web.CustomersPath + "?after=C-5"},
		{"customers_paused", web.CustomersPath + "?status=paused"},
		{"customers_do_not_contact", web.CustomersPath + "?status=do_not_contact"},
		{"customer", web.CustomerPath + "?id=C-777"},
		{"outbox_bulks_deep", web.OutboxPath + "?" + url.Values{"bulks": {web.FormatPosition(bulkAt, bulkID)}}.Encode()},
		{"schedules", web.SchedulesPath},
		{"schedule", web.SchedulePath + "?id=" + schedule},
	}
	for _, f := range []struct{ name, query string }{
		{"all", ""}, {"open", "state=open"}, {"unsettled", "state=open&state=partially_paid"}, {"customer", "customer=C-777"},
		{"overdue_30", "state=open&overdue=30"}, {"disputed", "disputed=yes"}, {"promise", "promise=1"},
	} {
		q, _ := url.ParseQuery(f.query)
		pages = append(pages, volumePage{"ledger_" + f.name, web.LedgerPath + "?" + q.Encode()})
		q.Set("after", invDeep)
		pages = append(pages, volumePage{"ledger_" + f.name + "_deep", web.LedgerPath + "?" + q.Encode()})
	}
	for _, state := range []string{"queued", "sent", "undeliverable"} {
		pages = append(pages, volumePage{"outbox_" + state, web.OutboxPath + "?state=" + state},
			volumePage{"outbox_" + state + "_deep", web.OutboxPath + "?" + url.Values{"state": {state}, "after": {outboxDeep[state]}}.Encode()})
	}
	for _, f := range []struct{ name, query string }{
		{"all", ""}, {"tool", "tool=collections.tool_7"}, {"tier", "risk=critical"}, {"denied", "outcome=denied"},
		{"rate_limited", "outcome=rate_limited"}, {"subject", "subject=user-123"}, {"actor", "actor=agent-3"},
		{"client", "clientId=client-2"}, {"a_day", "since=" + since + "&until=" + until},
		{"a_day_a_tool_denied", "since=" + since + "&until=" + until + "&tool=collections.tool_0&outcome=denied"},
		{"no_match", "tool=collections.none"},
	} {
		q, _ := url.ParseQuery(f.query)
		pages = append(pages, volumePage{"audit_" + f.name, web.AuditPath + "?" + q.Encode()})
		q.Set("after", trailDeep)
		pages = append(pages, volumePage{"audit_" + f.name + "_deep", web.AuditPath + "?" + q.Encode()})
	}
	return pages
}

// get renders path through the console's real handler, in process, as the signed-in person.
func (v *volumeConsole) get(tb testing.TB, path string) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest(http.MethodGet, v.e.base+path, nil)
	for _, c := range v.cookies {
		r.AddCookie(c)
	}
	w := httptest.NewRecorder()
	v.e.h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `<main`) {
		tb.Fatalf("GET %s = %d:\n%s", path, w.Code, w.Body.String())
	}
	return w
}

// bigTables are the tables of scale: no page may read one whole.
var bigTables = []string{"ledger_invoice", "ledger_payment", "ledger_allocation", "ledger_reference", "audit_event", "reminder_draft", "customer", "bulk_send",
	"schedule_batch"}

// TestConsolePagesVolume: every console page renders over 1 000 000 invoices, 100 000
// payments, 100 000 audit events and 300 000 drafts on PostgreSQL, and no query a page makes
// reads a table of scale whole (EXPLAIN of each, as the page ran it). Times are the
// benchmark's (BenchmarkConsolePages).
func TestConsolePagesVolume(t *testing.T) {
	tier.Volume(t)
	v := newVolumeConsole(t, true)
	for _, p := range v.pages {
		v.rec.Take()
		v.get(t, p.path)
		queries := v.rec.Take()
		if len(queries) == 0 {
			t.Errorf("%s: the page read nothing from the store", p.name)
		}
		var outline strings.Builder
		for _, q := range queries {
			if !q.Select() {
				continue
			}
			root, text := storetest.ExplainPG(t, v.db, q.SQL, q.Args...)
			for _, table := range bigTables {
				for _, seq := range root.SeqScans(table) {
					if seq == table {
						t.Errorf("%s: a query reads %s whole:\n%s\n%s", p.name, table, q.SQL, text)
					}
				}
			}
			first, _, _ := strings.Cut(strings.TrimSpace(q.SQL), "\n")
			fmt.Fprintf(&outline, "-- %.100s\n%s", first, root.Outline())
		}
		t.Logf("%s (%s): %d statements\n%s", p.name, p.path, len(queries), outline.String())
	}
}

// BenchmarkConsolePages: the server time of each console page over ConsoleVolume's store, the
// page rendered through the console's real handler as a signed-in person (the store is filled
// once per PostgreSQL server; each run copies it).
func BenchmarkConsolePages(b *testing.B) {
	v := newVolumeConsole(b, false)
	for _, p := range v.pages {
		b.Run(p.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				v.get(b, p.path)
			}
		})
	}
}
