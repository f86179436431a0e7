package collections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/tier"
)

const (
	bulk    = collections.BulkSendName
	getBulk = collections.GetBulkSendName
)

// bulkReader may only read: its dry run runs, and names what the real call lacks.
var bulkReader = &auth.Principal{Subject: "ana", ClientID: "collector-bot", Actor: "collector-bot", Kind: auth.KindAgent,
	Scopes: []string{"collections:read"}}

// bulkDraft writes an open draft for the stored customer id, to its current name and address,
// about one invoice due on due, in tone.
func (e *sendEnv) bulkDraft(t *testing.T, id, invoice, due string, tone reminders.Tone) reminders.Record {
	t.Helper()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	c := e.get(t, id)
	var rec reminders.Record
	err = e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		rec, _, err = reminders.Prepare(ctx, tx, tpl, reminders.Request{CustomerID: id, To: reminders.Recipient{Name: c.Name, Email: c.Email},
			Tone: tone, Language: reminders.PortugueseBR, CreatedBy: "ana",
			Invoices: []reminders.Invoice{{ID: invoice, DueDate: due, AmountCents: 123456}}}, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// setStatus sets a customer's contact status directly on its record (its drafts stay open).
func (e *sendEnv) setStatus(t *testing.T, id string, ch customers.Change) {
	t.Helper()
	ch.SetBy, ch.Reason = "carla", "test"
	if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := customers.SetStatus(ctx, tx, id, ch, e.clock())
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// bounced makes draft d undeliverable, as the outbox's owner records a 5xx.
func (e *sendEnv) bounced(t *testing.T, d reminders.Record) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		if err := reminders.MarkQueued(ctx, tx, d.ID, reminders.Queue{OutboxID: 1, MessageID: "<1.outbox@x>", By: "ana"}, e.clock()); err != nil {
			return err
		}
		return reminders.Delivery{}.Undeliverable(ctx, tx, d.ID, 1, "550", e.clock())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bulkArgs are the JSON arguments of a bulk call: sel (draftIds or filter), plus the control
// arguments given ("" and false are left out).
func bulkArgs(sel map[string]any, dry bool, planHash, key string) string {
	m := map[string]any{}
	for k, v := range sel {
		m[k] = v
	}
	if dry {
		m["dryRun"] = true
	}
	if planHash != "" {
		m["planHash"] = planHash
	}
	if key != "" {
		m["idempotencyKey"] = key
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// dryRun is a bulk dry run's answer.
type dryRun struct {
	DryRun         bool `json:"dryRun"`
	RecipientCount int  `json:"recipientCount"`
	SampleMessages []struct {
		To, Subject, PreviewText string
	} `json:"sampleMessages"`
	Warnings            []string       `json:"warnings"`
	MissingPermissions  []string       `json:"missingPermissions"`
	ExpectedSideEffects []string       `json:"expectedSideEffects"`
	EstimatedDurationMs int64          `json:"estimatedDurationMs"`
	PlanHash            string         `json:"planHash"`
	Skipped             map[string]int `json:"skipped"`
}

type bulkSent struct {
	DryRun         bool           `json:"dryRun"`
	RecipientCount int            `json:"recipientCount"`
	Warnings       []string       `json:"warnings"`
	PlanHash       string         `json:"planHash"`
	Skipped        map[string]int `json:"skipped"`
	BulkID         string         `json:"bulkId"`
	Queued         int            `json:"queued"`
	CreatedAt      string         `json:"createdAt"`
}

func (e *sendEnv) dry(t testing.TB, pr *auth.Principal, sel map[string]any) dryRun {
	t.Helper()
	return decode[dryRun](t, e.do(pr, urlClient, bulk, bulkArgs(sel, true, "", "")))
}

// bulkCall is the agent's real call, after the round retry asked for.
func (e *sendEnv) bulkCall(cl pipeline.Client, sel map[string]any, planHash, key string, retry pipelinetest.Asked) pipeline.Result {
	return e.p.Do(context.Background(), retry.Retry(pipeline.Call{Principal: sender, RequestID: "r-bulk", Tool: bulk,
		Args: json.RawMessage(bulkArgs(sel, false, planHash, key)), Client: cl}))
}

// draftStates counts the drafts by state.
func (e *sendEnv) draftStates(t *testing.T) map[string]int {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT state, COUNT(*) FROM reminder_draft GROUP BY state`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int64
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = int(n)
	}
	return out
}

// portfolio is the test's customers and drafts: two plain, one named with no letter (the
// fallback greeting), one do_not_contact by its address (another customer), one paused, one
// to an address that bounced before (in another case), and one draft already sent (for
// draftIds). It returns every open draft, by id, and the sent one.
func (e *sendEnv) portfolio(t *testing.T) (open []reminders.Record, sent reminders.Record) {
	t.Helper()
	for _, c := range []customers.Record{
		{ID: "C-1", Name: "Padaria Pão Quente", Email: "contas@padaria.example"},
		{ID: "C-2", Name: "Oficina do Zé", Email: "ze@oficina.example"},
		{ID: "C-3", Name: "12.345.678/0001-90", Email: "fin@cnpj.example"},
		{ID: "C-4", Name: "Mercado Grupo", Email: "contas@grupo.example"},
		{ID: "C-5", Name: "Mercado Grupo Filial", Email: "CONTAS@grupo.example"},
		{ID: "C-6", Name: "Farmácia Sol", Email: "sol@farmacia.example"},
		{ID: "C-7", Name: "Loja Antiga", Email: "velho@loja.example"},
		{ID: "C-8", Name: "Loja Nova", Email: "Velho@Loja.example"},
	} {
		e.customer(t, c)
	}
	open = append(open,
		e.bulkDraft(t, "C-1", "NF-1", "2026-05-01", reminders.Friendly),
		e.bulkDraft(t, "C-2", "NF-2", "2026-06-20", reminders.Firm),
		e.bulkDraft(t, "C-3", "NF-3", "2026-06-01", reminders.Friendly),
		e.bulkDraft(t, "C-4", "NF-4", "2026-06-01", reminders.Friendly),
		e.bulkDraft(t, "C-6", "NF-6", "2026-06-01", reminders.Friendly),
		e.bulkDraft(t, "C-8", "NF-8", "2026-06-01", reminders.Friendly),
	)
	e.setStatus(t, "C-5", customers.Change{Status: customers.DoNotContact})
	e.setStatus(t, "C-6", customers.Change{Status: customers.Paused, PausedUntil: "2026-08-01"})
	e.bounced(t, e.bulkDraft(t, "C-7", "NF-7", "2026-06-01", reminders.Friendly))
	sent = e.bulkDraft(t, "C-2", "NF-9", "2026-06-01", reminders.Friendly)
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		return reminders.MarkQueued(ctx, tx, sent.ID, reminders.Queue{OutboxID: 2, MessageID: "<2.outbox@x>", By: "ana"}, e.clock())
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(open, func(a, b reminders.Record) int { return strings.Compare(a.ID, b.ID) })
	return open, sent
}

var planHashForm = regexp.MustCompile(`^[0-9a-f]{64}$`)

// TestBulkDryRun: a dry run answers seed 000's preview field for field, from a portfolio that
// triggers each warning: the fallback greeting, a suppressed (undeliverable) address, a
// do_not_contact address, a paused customer, a draftId no longer open; samples are the first
// messages by draft id; missingPermissions names what a reader's real call would lack;
// nothing changes; the same portfolio gives the same planHash, and each change another.
func TestBulkDryRun(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		open, sent := e.portfolio(t)
		ids := []string{sent.ID}
		for _, d := range open {
			ids = append(ids, d.ID)
		}
		before := e.draftStates(t)
		got := e.dry(t, sender, map[string]any{"draftIds": ids})
		// Sent: C-1, C-2, C-3 (fallback greeting). Skipped: C-4 (its address is C-5's,
		// do_not_contact), C-6 (paused), C-8 (its address bounced for C-7), and the sent draft.
		var sends []reminders.Record
		for _, d := range open {
			if slices.Contains([]string{"C-1", "C-2", "C-3"}, d.CustomerID) {
				sends = append(sends, d)
			}
		}
		want := dryRun{
			DryRun: true, RecipientCount: 3, Skipped: withLedger(map[string]int{"notOpen": 1, "doNotContact": 1, "paused": 1, "suppressed": 1}),
			Warnings: []string{
				`1 recipient has no first name (their name has no letter): the message opens with the fallback greeting ("Olá!", "Prezado(a) cliente,", "Hello," or "Dear customer,", by language and tone).`,
				"1 draft goes to an address marked undeliverable (an earlier message to it was refused for good) and is skipped.",
				"1 draft is for a customer who asked not to be contacted (do_not_contact), or who shares the address of one, and is skipped.",
				"1 draft is for a customer whose contact is paused, or who shares the address of one, and is skipped.",
				"3 drafts name an invoice that is not in the ledger — payment cannot be checked — and are sent all the same.",
				"1 of draftIds is not open (already queued, sent, undeliverable or discarded) and is skipped.",
			},
			MissingPermissions: []string{},
			ExpectedSideEffects: []string{
				"3 external e-mails are sent outside cobranca through the outbox, one per draft, each once, with its own Message-ID.",
				"3 drafts become queued (then sent or undeliverable as delivery ends), recorded with the bulk send's id.",
				"1 bulk send is recorded (collections.get_bulk_send reports its queued, sent and failed counts).",
				"1 audit event of type email.external.bulk_sent is written, with counts only.",
			},
			EstimatedDurationMs: e.mail.Estimate(3).Milliseconds(),
			PlanHash:            got.PlanHash,
		}
		for _, d := range sends {
			want.SampleMessages = append(want.SampleMessages, struct{ To, Subject, PreviewText string }{d.To.Email, d.Subject, previewOf(d.Body)})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("dry run (-want +got):\n%s", diff)
		}
		if !planHashForm.MatchString(got.PlanHash) || want.EstimatedDurationMs <= 0 {
			t.Errorf("planHash %q, estimate %d", got.PlanHash, want.EstimatedDurationMs)
		}
		c3 := slices.IndexFunc(sends, func(d reminders.Record) bool { return d.CustomerID == "C-3" })
		if !strings.HasPrefix(got.SampleMessages[c3].PreviewText, "Olá!\n") {
			t.Errorf("C-3's sample starts %q, want the fallback greeting", got.SampleMessages[c3].PreviewText)
		}
		// The warnings carry counts, never a name or an address.
		for _, w := range got.Warnings {
			for _, secret := range []string{"@", "Padaria", "Mercado", "C-"} {
				if strings.Contains(w, secret) {
					t.Errorf("warning %q names %q", w, secret)
				}
			}
		}
		if diff := cmp.Diff(before, e.draftStates(t)); diff != "" || e.jobs(t) != 0 {
			t.Errorf("a dry run changed the drafts (-before +after):\n%s\nor enqueued %d", diff, e.jobs(t))
		}
		// A reader's dry run runs, and names the permission its real call would lack.
		if r := e.dry(t, bulkReader, map[string]any{"draftIds": ids}); !slices.Equal(r.MissingPermissions, []string{"reminders:send"}) || r.PlanHash != got.PlanHash {
			t.Errorf("reader's dry run: missingPermissions %q, planHash %s; want [reminders:send], the same plan", r.MissingPermissions, r.PlanHash)
		}
		// Deterministic: the same again; each change of what would be sent or skipped, another.
		if again := e.dry(t, sender, map[string]any{"draftIds": ids}); again.PlanHash != got.PlanHash {
			t.Errorf("the same dry run twice: %s, then %s", got.PlanHash, again.PlanHash)
		}
		seen := map[string]string{got.PlanHash: "first"}
		for _, change := range []struct {
			name string
			do   func()
		}{
			{"C-6 contactable", func() { e.setStatus(t, "C-6", customers.Change{Status: customers.Contactable}) }},
			{"C-1 do_not_contact", func() { e.setStatus(t, "C-1", customers.Change{Status: customers.DoNotContact}) }},
			{"C-3's draft discarded", func() {
				if _, err := reminders.DiscardOpen(context.Background(), e.db, "C-3", e.clock()); err != nil {
					t.Fatal(err)
				}
			}},
		} {
			change.do()
			h := e.dry(t, sender, map[string]any{"draftIds": ids}).PlanHash
			if prev, ok := seen[h]; ok {
				t.Errorf("after %s: the plan hash of %s", change.name, prev)
			}
			seen[h] = change.name
		}
	})
}

// withLedger is skips with the ledger's reasons, none: the portfolio's invoices are not in the
// ledger, and a draft naming one is sent unless the server requires the ledger.
func withLedger(skips map[string]int) map[string]int {
	out := map[string]int{"settled": 0, "stale": 0, "notInLedger": 0}
	for k, v := range skips {
		out[k] = v
	}
	return out
}

// previewOf is the start of a body as a sample shows it: its first 200 characters.
func previewOf(body string) string {
	r := []rune(body)
	if len(r) <= 200 {
		return body
	}
	return string(r[:200]) + "…"
}

// TestBulkFilter: the filter selects open drafts by customer, days overdue (from the earliest
// due date, today 2026-07-01) and tone; the plan skips as for draftIds.
func TestBulkFilter(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		e.portfolio(t)
		for _, tc := range []struct {
			filter map[string]any
			sends  int
			skips  map[string]int
		}{
			// Open: C-1 (due 05-01, friendly), C-2 (06-20, firm), C-3, C-4, C-6, C-8 (06-01, friendly).
			{map[string]any{}, 3, map[string]int{"notOpen": 0, "doNotContact": 1, "paused": 1, "suppressed": 1}},
			{map[string]any{"tone": "firm"}, 1, map[string]int{"notOpen": 0, "doNotContact": 0, "paused": 0, "suppressed": 0}},
			{map[string]any{"minDaysOverdue": 30}, 2, map[string]int{"notOpen": 0, "doNotContact": 1, "paused": 1, "suppressed": 1}},
			{map[string]any{"minDaysOverdue": 31}, 1, map[string]int{"notOpen": 0, "doNotContact": 0, "paused": 0, "suppressed": 0}},
			{map[string]any{"minDaysOverdue": 62}, 0, map[string]int{"notOpen": 0, "doNotContact": 0, "paused": 0, "suppressed": 0}},
			{map[string]any{"customerIds": []string{"C-2", "C-6", "C-7"}}, 1, map[string]int{"notOpen": 0, "doNotContact": 0, "paused": 1, "suppressed": 0}},
		} {
			got := e.dry(t, sender, map[string]any{"filter": tc.filter})
			if got.RecipientCount != tc.sends || !cmp.Equal(got.Skipped, withLedger(tc.skips)) {
				t.Errorf("filter %v: %d recipients, skipped %v; want %d, %v", tc.filter, got.RecipientCount, got.Skipped, tc.sends, tc.skips)
			}
		}
	})
}

// TestBulkArguments: every rule on the arguments is refused with a stable code naming the
// field, before anything is read or asked; so is a draft id that names no draft.
func TestBulkArguments(t *testing.T) {
	e := newSendEnv(t, storetest.SQLite(t))
	open, _ := e.portfolio(t)
	some := "d_" + strings.Repeat("a", 26)
	tooMany := make([]string, reminders.MaxBulk+1)
	for i := range tooMany {
		tooMany[i] = ident.New(reminders.IDPrefix)
	}
	for _, tc := range []struct {
		args  string
		code  failure.Code
		field string
	}{
		{`{"dryRun":true}`, failure.InvalidArguments, "filter"},                                               // is required when draftIds is not given
		{`{"dryRun":true,"draftIds":["` + open[0].ID + `"],"filter":{}}`, failure.InvalidArguments, "filter"}, // is allowed only when draftIds is not given
		{`{"dryRun":true,"draftIds":[]}`, failure.InvalidArguments, "draftIds"},
		{`{"dryRun":true,"draftIds":["x"]}`, failure.InvalidArguments, "draftIds[0]"},
		{`{"dryRun":true,"draftIds":["` + open[0].ID + `","` + open[0].ID + `"]}`, failure.InvalidArguments, "draftIds"},
		{`{"dryRun":true,"draftIds":["` + open[0].ID + `","` + some + `"]}`, reminders.CodeDraftNotFound, "draftIds[1]"},
		{`{"dryRun":true,"filter":{"customerIds":[" C-1"]}}`, failure.InvalidArguments, "filter.customerIds[0]"},
		{`{"dryRun":true,"filter":{"customerIds":[]}}`, failure.InvalidArguments, "filter.customerIds"},
		{`{"dryRun":true,"filter":{"minDaysOverdue":-1}}`, failure.InvalidArguments, "filter.minDaysOverdue"},
		{`{"dryRun":true,"filter":{"minDaysOverdue":3651}}`, failure.InvalidArguments, "filter.minDaysOverdue"},
		{`{"dryRun":true,"filter":{"tone":"rude"}}`, failure.InvalidArguments, "filter.tone"},
		{`{"dryRun":true,"filter":{"since":"2026-01-01"}}`, failure.InvalidArguments, "filter.since"},
		{bulkArgs(map[string]any{"draftIds": tooMany}, true, "", ""), failure.InvalidArguments, "draftIds"},
	} {
		res := e.do(sender, urlClient, bulk, tc.args)
		if code, field := failed(res); code != tc.code || field != tc.field {
			t.Errorf("%.120s: %v %v, want %s on %s", tc.args, res.Kind, res.Err, tc.code, tc.field)
		}
	}
}

// TestBulkNeedsDryRun: the real call without planHash, or citing a plan no dry run of this
// caller showed for these arguments, is refused dry_run_required before a person is asked;
// a filter that selects nothing to send is refused bulk_empty.
func TestBulkNeedsDryRun(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		open, _ := e.portfolio(t)
		sel := map[string]any{"draftIds": []string{open[0].ID}}
		other := map[string]any{"draftIds": []string{open[1].ID}}
		for _, tc := range []struct {
			name string
			res  pipeline.Result
		}{
			{"no planHash", e.bulkCall(urlClient, sel, "", "k-1", pipelinetest.Asked{})},
			{"a plan never shown", e.bulkCall(urlClient, sel, strings.Repeat("0", 64), "k-2", pipelinetest.Asked{})},
			{"another selection's plan", e.bulkCall(urlClient, sel, e.dry(t, sender, other).PlanHash, "k-3", pipelinetest.Asked{})},
		} {
			if code, field := failed(tc.res); code != failure.DryRunRequired || field != "planHash" {
				t.Errorf("%s: %v %v, want dry_run_required on planHash", tc.name, tc.res.Kind, tc.res.Err)
			}
		}
		empty := map[string]any{"filter": map[string]any{"minDaysOverdue": 3000}}
		h := e.dry(t, sender, empty).PlanHash
		if code, field := failed(e.bulkCall(urlClient, empty, h, "k-4", pipelinetest.Asked{})); code != reminders.CodeBulkEmpty || field != "filter" {
			t.Errorf("an empty bulk: %s on %s, want bulk_empty on filter", code, field)
		}
		if list, err := e.approvals.List(context.Background(), e.db, time.Time{}, 10); err != nil || len(list) != 0 {
			t.Errorf("approvals = %d (%v), want none asked for", len(list), err)
		}
	})
}

// TestBulkPlanChanged: a plan that changed since its dry run is refused plan_changed — before
// a person is asked (a customer newly do_not_contact), and after the approval, when the call
// runs (a draft discarded and replaced by prepare_reminder's new one): nothing is enqueued, no
// draft changes, no bulk_sent event, the approval stays approved.
func TestBulkPlanChanged(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		open, _ := e.portfolio(t)
		sel := map[string]any{"filter": map[string]any{"customerIds": []string{"C-1", "C-2"}}}
		h := e.dry(t, sender, sel).PlanHash
		e.setStatus(t, "C-2", customers.Change{Status: customers.DoNotContact})
		res := e.bulkCall(cl, sel, h, "k-1", pipelinetest.Asked{})
		if code, field := failed(res); code != failure.PlanChanged || field != "planHash" {
			t.Fatalf("after C-2 became do_not_contact: %v %v, want plan_changed", res.Kind, res.Err)
		}
		if list, err := e.approvals.List(context.Background(), e.db, time.Time{}, 10); err != nil || len(list) != 0 {
			t.Errorf("approvals = %d (%v), want none asked for", len(list), err)
		}
		h = e.dry(t, sender, sel).PlanHash
		ask := pipelinetest.AskedOf(t, e.bulkCall(cl, sel, h, "k-2", pipelinetest.Asked{}), cl)
		e.approve(t, ask.ID)
		// C-1's name changes: its open draft is discarded and a new one written.
		e.customer(t, customers.Record{ID: "C-1", Name: "Padaria Pão Quente Ltda", Email: "contas@padaria.example"})
		if _, err := reminders.DiscardOpen(context.Background(), e.db, "C-1", e.clock()); err != nil {
			t.Fatal(err)
		}
		e.bulkDraft(t, "C-1", "NF-1", "2026-05-01", reminders.Friendly)
		before := e.draftStates(t)
		res = e.bulkCall(cl, sel, h, "k-2", ask)
		if code, field := failed(res); code != failure.PlanChanged || field != "planHash" {
			t.Fatalf("after the draft was replaced: %v %v, want plan_changed", res.Kind, res.Err)
		}
		if diff := cmp.Diff(before, e.draftStates(t)); diff != "" || e.jobs(t) != 0 || e.bulkEvents(t) != 0 || e.approvalState(t, ask.ID) != approval.Approved {
			t.Errorf("refused, yet: drafts (-before +after) %s, %d entries, %d events, approval %s", diff, e.jobs(t), e.bulkEvents(t), e.approvalState(t, ask.ID))
		}
		_ = open
	})
}

// bulkEvents counts the committed email.external.bulk_sent events.
func (e *sendEnv) bulkEvents(t *testing.T) int {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = 'email.external.bulk_sent' AND outcome = 'allowed'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// TestBulkRoundTrip: dry run, the real call citing its planHash, a person approves the dry
// run's preview (counts, samples, warnings, side effects, duration, plan hash), the retry
// queues every message; the SMTP server receives each exactly once under its draft's
// Message-ID; get_bulk_send's counts reach sent; one email.external.bulk_sent event with
// counts only; list_drafts and get_customer show the drafts sent; a repeat sends nothing.
func TestBulkRoundTrip(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		ctx := context.Background()
		open, _ := e.portfolio(t)
		for i := range 40 {
			id := fmt.Sprintf("B-%02d", i)
			e.customer(t, customers.Record{ID: id, Name: "Cliente " + id, Email: fmt.Sprintf("b%02d@clientes.example", i)})
			open = append(open, e.bulkDraft(t, id, "NF-"+id, "2026-06-01", reminders.Friendly))
		}
		sel := map[string]any{"filter": map[string]any{"minDaysOverdue": 10}}
		dr := e.dry(t, sender, sel)
		if dr.RecipientCount != 43 {
			t.Fatalf("dry run: %d recipients, want 43", dr.RecipientCount)
		}
		ask := pipelinetest.AskedOf(t, e.bulkCall(cl, sel, dr.PlanHash, "k-1", pipelinetest.Asked{}), cl)
		a, err := e.approvals.Get(ctx, e.db, ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range append(append([]string{"send 43 messages by e-mail", "Sample messages (3 of 43)", "Plan hash: " + dr.PlanHash,
			"Estimated duration: ", "To \"" + dr.SampleMessages[0].To + "\""}, dr.Warnings...), dr.ExpectedSideEffects...) {
			if !strings.Contains(a.Preview, want) {
				t.Errorf("the approval's preview lacks %q:\n%s", want, a.Preview)
			}
		}
		if e.jobs(t) != 0 {
			t.Fatal("enqueued before the approval")
		}
		e.approve(t, ask.ID)
		done := e.bulkCall(cl, sel, dr.PlanHash, "k-1", ask)
		got := decode[bulkSent](t, done)
		if got.DryRun || got.Queued != 43 || got.RecipientCount != 43 || got.PlanHash != dr.PlanHash || !cmp.Equal(got.Warnings, dr.Warnings) ||
			got.CreatedAt != "2026-07-01T12:00:00Z" || !strings.HasPrefix(got.BulkID, "b_") {
			t.Errorf("answer = %+v", got)
		}
		msgs := e.smtp.Wait(t, 43, 60*time.Second)
		byMID := map[string]int{}
		for _, m := range msgs {
			byMID[m.MessageID]++
		}
		var progress map[string]any
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			progress = decode[map[string]any](t, e.do(reader, legacy, getBulk, `{"bulkId":"`+got.BulkID+`"}`))
			if progress["sent"] == 43.0 || time.Now().After(deadline) {
				break
			}
		}
		wantProgress := map[string]any{"bulkId": got.BulkID, "createdAt": got.CreatedAt, "total": 43.0, "queued": 0.0, "sent": 43.0, "failed": 0.0,
			"skipped": 3.0, "done": true}
		if diff := cmp.Diff(wantProgress, progress); diff != "" {
			t.Errorf("get_bulk_send (-want +got):\n%s", diff)
		}
		sentDrafts := 0
		for _, d := range open {
			now := e.draftNow(t, d.ID)
			if now.State != reminders.Sent {
				continue
			}
			sentDrafts++
			if byMID[now.Sending.MessageID] != 1 || now.Sending.ApprovalID != ask.ID || now.Sending.QueuedByActor != "collector-bot" {
				t.Errorf("draft %s: sending %+v, received %d times", d.ID, now.Sending, byMID[now.Sending.MessageID])
			}
		}
		if sentDrafts != 43 || len(byMID) != 43 {
			t.Errorf("%d drafts sent, %d distinct messages; want 43 each", sentDrafts, len(byMID))
		}
		if n := e.bulkEvents(t); n != 1 {
			t.Errorf("%d email.external.bulk_sent events, want 1", n)
		}
		var details string
		if err := e.db.QueryRow(ctx, `SELECT CAST(details AS text) FROM audit_event WHERE event = 'email.external.bulk_sent' AND outcome = 'allowed'`).Scan(&details); err != nil {
			t.Fatal(err)
		}
		var counts map[string]int64
		if err := json.Unmarshal([]byte(details), &counts); err != nil || counts["messagesQueued"] != 43 || counts["draftsSkipped"] != 3 {
			t.Errorf("the event's details = %s, want counts only", details)
		}
		repeat := e.bulkCall(cl, sel, dr.PlanHash, "k-1", ask)
		if repeat.Kind != pipeline.Complete || !bytes.Equal(repeat.Structured, done.Structured) {
			t.Errorf("repeat = %v %v, want the stored answer", repeat.Kind, repeat.Err)
		}
		time.Sleep(300 * time.Millisecond)
		if n := len(e.smtp.Messages()); n != 43 || e.jobs(t) != 43 {
			t.Errorf("after the repeat: %d messages, %d entries; want 43 each", n, e.jobs(t))
		}
		page := decode[sentPage](t, e.call(reader, collections.ListDraftsName, map[string]any{"customerId": "B-07"}))
		if len(page.Drafts) != 1 || page.Drafts[0].State != "sent" || page.Drafts[0].MessageID == "" {
			t.Errorf("list_drafts = %+v, want B-07's draft sent", page.Drafts)
		}
		cust := decode[map[string]any](t, e.call(reader, collections.GetCustomerName, map[string]any{"customerId": "B-07"}))
		if sends, _ := cust["recentSends"].([]any); len(sends) != 1 || len(cust["openDrafts"].([]any)) != 0 {
			t.Errorf("get_customer = %v, want one send, no open draft", cust)
		}
	})
}

// TestGetBulkSend: an unknown or malformed bulkId is refused with its code; a caller without
// collections:read is denied.
func TestGetBulkSend(t *testing.T) {
	e := newSendEnv(t, storetest.SQLite(t))
	for _, tc := range []struct {
		args  string
		code  failure.Code
		field string
	}{
		{`{"bulkId":"b_` + strings.Repeat("a", 26) + `"}`, reminders.CodeBulkNotFound, "bulkId"},
		{`{"bulkId":"d_` + strings.Repeat("a", 26) + `"}`, failure.InvalidArguments, "bulkId"},
		{`{}`, failure.InvalidArguments, "bulkId"},
	} {
		if code, field := failed(e.do(reader, legacy, getBulk, tc.args)); code != tc.code || field != tc.field {
			t.Errorf("%s: %s on %s, want %s on %s", tc.args, code, field, tc.code, tc.field)
		}
	}
	res := e.do(&auth.Principal{Subject: "x", ClientID: "y", Scopes: []string{"reminders:send"}}, legacy, getBulk, `{"bulkId":"b_`+strings.Repeat("a", 26)+`"}`)
	if res.Kind != pipeline.Denied || !slices.Equal(res.Missing, []string{"collections:read"}) {
		t.Errorf("without collections:read: %v %v", res.Kind, res.Missing)
	}
}

// seedBulk stores n customers, each with one open draft: friendly but the last, firm, when n
// is one past the most a bulk send takes.
func seedBulk(t testing.TB, e *sendEnv, n int) {
	t.Helper()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			id := fmt.Sprintf("T-%05d", i)
			to := reminders.Recipient{Name: "Cliente " + id, Email: fmt.Sprintf("t%05d@clientes.example", i)}
			if _, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: to.Name, Email: to.Email}, e.clock()); err != nil {
				return err
			}
			tone := reminders.Friendly
			if i == reminders.MaxBulk {
				tone = reminders.Firm
			}
			if _, _, err := reminders.Prepare(ctx, tx, tpl, reminders.Request{CustomerID: id, To: to, Tone: tone, Language: reminders.PortugueseBR,
				CreatedBy: "ana", Invoices: []reminders.Invoice{{ID: "NF-" + id, DueDate: "2026-06-01", AmountCents: 1000}}}, e.clock()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d customers and drafts in %v", n, time.Since(start))
}

// TestBulkTenThousand: a filter that selects 10 001 open drafts is refused bulk_too_large on
// filter; one that selects 10 000 (one customer each) is dry-run, approved and queued in one
// call, within the call's transaction, each draft queued once under its own outbox entry.
// A test of scale: TestBulkLimitInMemory checks the limit and the preview's bound in the fast
// tier, TestBulkRoundTrip one entry per draft.
func TestBulkTenThousand(t *testing.T) {
	tier.Volume(t)
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		ctx := context.Background()
		seedBulk(t, e, reminders.MaxBulk+1)
		if code, field := failed(e.do(sender, urlClient, bulk, `{"dryRun":true,"filter":{}}`)); code != reminders.CodeBulkTooLarge || field != "filter" {
			t.Errorf("a filter selecting %d drafts: %s on %s, want bulk_too_large on filter", reminders.MaxBulk+1, code, field)
		}
		sel := map[string]any{"filter": map[string]any{"tone": "friendly"}}
		start := time.Now()
		dr := e.dry(t, sender, sel)
		dryTook := time.Since(start)
		if dr.RecipientCount != reminders.MaxBulk {
			t.Fatalf("dry run: %d recipients, want %d", dr.RecipientCount, reminders.MaxBulk)
		}
		start = time.Now()
		ask := pipelinetest.AskedOf(t, e.bulkCall(urlClient, sel, dr.PlanHash, "k-1", pipelinetest.Asked{}), urlClient)
		askTook := time.Since(start)
		a, err := e.approvals.Get(ctx, db, ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Preview) > 4000 {
			t.Errorf("the approval's preview of 10 000 messages is %d bytes, want it bounded", len(a.Preview))
		}
		e.approve(t, ask.ID)
		start = time.Now()
		got := decode[bulkSent](t, e.bulkCall(urlClient, sel, dr.PlanHash, "k-1", ask))
		runTook := time.Since(start)
		t.Logf("10 000 drafts: dry run %v, approval asked %v, the approved call (plan, enqueue, queue) %v", dryTook, askTook, runTook)
		if got.Queued != reminders.MaxBulk {
			t.Errorf("queued %d, want %d", got.Queued, reminders.MaxBulk)
		}
		var distinct int64
		if err := db.QueryRow(ctx, `SELECT COUNT(DISTINCT outbox_id) FROM reminder_draft WHERE bulk_id = $1 AND state IN ('queued', 'sent')`, got.BulkID).Scan(&distinct); err != nil {
			t.Fatal(err)
		}
		if distinct != reminders.MaxBulk || storetest.Count(t, db, "river_job") != reminders.MaxBulk {
			t.Errorf("%d distinct entries on the bulk's drafts, %d in the outbox; want %d each", distinct, storetest.Count(t, db, "river_job"), reminders.MaxBulk)
		}
	})
}

// TestBulkRace: two approved bulk calls of the same plan (two keys) and a send_reminder of one
// of its drafts run at once: the drafts are sent once — one bulk queues the plan, the other
// call finds it changed (plan_changed) or its draft not open — and every draft of the plan
// is queued under one outbox entry, one message each.
func TestBulkRace(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		for i := range 30 {
			id := fmt.Sprintf("R-%02d", i)
			e.customer(t, customers.Record{ID: id, Name: "Cliente " + id, Email: fmt.Sprintf("r%02d@clientes.example", i)})
			e.bulkDraft(t, id, "NF-"+id, "2026-06-01", reminders.Friendly)
		}
		single := e.bulkDraft(t, "R-07", "NF-extra", "2026-06-02", reminders.Firm)
		sel := map[string]any{"filter": map[string]any{}}
		h := e.dry(t, sender, sel).PlanHash
		one := pipelinetest.AskedOf(t, e.bulkCall(urlClient, sel, h, "k-1", pipelinetest.Asked{}), urlClient)
		two := pipelinetest.AskedOf(t, e.bulkCall(urlClient, sel, h, "k-2", pipelinetest.Asked{}), urlClient)
		three := e.asked(t, urlClient, single.ID, "s-1")
		for _, a := range []pipelinetest.Asked{one, two, three} {
			e.approve(t, a.ID)
		}
		results := make([]pipeline.Result, 3)
		var wg sync.WaitGroup
		wg.Go(func() { results[0] = e.bulkCall(urlClient, sel, h, "k-1", one) })
		wg.Go(func() { results[1] = e.bulkCall(urlClient, sel, h, "k-2", two) })
		wg.Go(func() { results[2] = e.sendCall(sender, urlClient, single.ID, "s-1", three) })
		wg.Wait()
		bulks := 0
		for i, r := range results[:2] {
			switch code, _ := failed(r); {
			case r.Kind == pipeline.Complete:
				bulks++
			case code != failure.PlanChanged:
				t.Errorf("bulk call %d: %v %v, want complete or plan_changed", i, r.Kind, r.Err)
			}
		}
		sent := results[2].Kind == pipeline.Complete
		if code, _ := failed(results[2]); !sent && code != reminders.CodeDraftNotOpen {
			t.Errorf("send_reminder: %v %v, want complete or draft_not_open", results[2].Kind, results[2].Err)
		}
		// The bulk plan held the single draft: if send_reminder went first, every bulk found
		// its plan changed; otherwise one bulk queued it all.
		want := 0
		if bulks == 1 {
			want += 31
		}
		if sent {
			want++
		}
		if bulks > 1 || (bulks == 0) != sent || e.jobs(t) != want {
			t.Fatalf("%d bulks, send_reminder complete %v, %d entries; want one of the two to win, %d entries", bulks, sent, e.jobs(t), want)
		}
		var drafts, entries int64
		if err := db.QueryRow(context.Background(), `SELECT COUNT(*), COUNT(DISTINCT outbox_id) FROM reminder_draft WHERE state <> 'draft'`).Scan(&drafts, &entries); err != nil {
			t.Fatal(err)
		}
		if drafts != int64(want) || entries != int64(want) {
			t.Errorf("%d drafts sent under %d entries, want %d each", drafts, entries, want)
		}
	})
}

// TestBulkEnqueueFailsWhole: a message the outbox refuses in the second chunk the call enqueues
// (a stored draft whose address was corrupted) fails the whole call: nothing is left in the
// outbox, no draft is queued, no bulk send is recorded, no event says it was sent, the key
// stores no answer, and the approval is not used up.
func TestBulkEnqueueFailsWhole(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		ctx := context.Background()
		const n = 150 // two chunks of progressStep (100) messages
		var open []reminders.Record
		for i := range n {
			id := fmt.Sprintf("R-%03d", i)
			e.customer(t, customers.Record{ID: id, Name: "Cliente " + id, Email: fmt.Sprintf("r%03d@clientes.example", i)})
			open = append(open, e.bulkDraft(t, id, "NF-"+id, "2026-06-01", reminders.Friendly))
		}
		slices.SortFunc(open, func(a, b reminders.Record) int { return strings.Compare(a.ID, b.ID) })
		asOwner(t, db, `UPDATE reminder_draft SET recipient_email = 'not an address' WHERE id = $1`, open[120].ID)
		sel := map[string]any{"filter": map[string]any{}}
		dr := e.dry(t, sender, sel)
		if dr.RecipientCount != n {
			t.Fatalf("dry run: %d recipients, want %d", dr.RecipientCount, n)
		}
		ask := pipelinetest.AskedOf(t, e.bulkCall(urlClient, sel, dr.PlanHash, "k-1", pipelinetest.Asked{}), urlClient)
		e.approve(t, ask.ID)
		res := e.bulkCall(urlClient, sel, dr.PlanHash, "k-1", ask)
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.Internal {
			t.Fatalf("the approved call: %v %+v, want internal_error", res.Kind, res.Err)
		}
		if j, b := e.jobs(t), storetest.Count(t, db, "bulk_send"); j != 0 || b != 0 {
			t.Errorf("%d outbox entries, %d bulk sends left; want none", j, b)
		}
		if states := e.draftStates(t); states["draft"] != n || len(states) != 1 {
			t.Errorf("drafts by state %v, want %d open", states, n)
		}
		if n := e.bulkEvents(t); n != 0 {
			t.Errorf("%d allowed email.external.bulk_sent events, want none", n)
		}
		if a, err := e.approvals.Get(ctx, db, ask.ID); err != nil || a.State != approval.Approved {
			t.Errorf("approval after the failure: %+v %v, want approved, not used", a, err)
		}
	})
}

// asOwner runs sql in db as the database's owner: on PostgreSQL the serving role may not
// change what the test corrupts.
func asOwner(t *testing.T, db store.DB, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	if db.Dialect() != store.Postgres {
		if _, err := db.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
		return
	}
	var name string
	if err := db.QueryRow(ctx, `SELECT current_database()`).Scan(&name); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(pg.Database(t)) // a superuser's URL, to another database
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}
