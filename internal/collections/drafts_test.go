package collections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// env is the product's pipeline on one migrated store, with audit, on a clock the test moves.
type env struct {
	db  store.DB
	p   *pipeline.Pipeline
	mu  sync.Mutex
	now time.Time
}

// eachEnv runs fn on SQLite and on PostgreSQL, where the pipeline runs as the serving role.
func eachEnv(t *testing.T, fn func(t *testing.T, e *env)) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) { fn(t, newEnv(t, db)) })
}

func newEnv(t testing.TB, db store.DB) *env {
	t.Helper()
	e := &env{db: db, now: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}
	keys, err := idempotency.New(db.Dialect(), time.Hour, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	e.p = pipelinetest.Product(t, pipeline.Options{Now: e.clock, DB: db, Keys: keys, Auditor: pipelinetest.Auditor(t, db)})
	return e
}

func (e *env) clock() time.Time { e.mu.Lock(); defer e.mu.Unlock(); return e.now }

func (e *env) advance(d time.Duration) { e.mu.Lock(); e.now = e.now.Add(d); e.mu.Unlock() }

var (
	reader = &auth.Principal{Subject: "ana", ClientID: "ops", Scopes: []string{"collections:read"}}
	writer = &auth.Principal{Subject: "ana", ClientID: "ledger-copilot", Actor: "ledger-copilot", Kind: auth.KindAgent,
		Scopes: []string{"collections:read", "reminders:write"}}
)

func (e *env) call(pr *auth.Principal, tool string, args any) pipeline.Result {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return e.p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r1", Tool: tool, Args: b})
}

func decode[T any](t testing.TB, res pipeline.Result) T {
	t.Helper()
	var v T
	if res.Kind != pipeline.Complete {
		t.Fatalf("result %d %v, want complete", res.Kind, res.Err)
	}
	if err := json.Unmarshal(res.Structured, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

type listPage struct {
	Drafts []struct {
		ID           string `json:"id"`
		CustomerID   string `json:"customerId"`
		State        string `json:"state"`
		Tone         string `json:"tone"`
		Language     string `json:"language"`
		Subject      string `json:"subject"`
		InvoiceCount int    `json:"invoiceCount"`
		TotalCents   int64  `json:"totalCents"`
		CreatedAt    string `json:"createdAt"`
	} `json:"drafts"`
	NextCursor string `json:"nextCursor"`
}

// seedDrafts writes n drafts straight into the store, alternating customers c1 and c2 and two
// to a creation time, and discards c2's; it returns them newest first.
func seedDrafts(t *testing.T, db store.DB, n int) []reminders.Record {
	t.Helper()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
	var all []reminders.Record
	for i := range n {
		err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			id, at := []string{"c1", "c2"}[i%2], t0.Add(time.Duration(i/2)*time.Second)
			if _, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Name", Email: "a@example.com"}, at); err != nil {
				return err
			}
			r, _, err := reminders.Prepare(ctx, tx, tpl, reminders.Request{
				CustomerID: id, To: reminders.Recipient{Name: "Name", Email: "a@example.com"}, Tone: reminders.Friendly, Language: reminders.PortugueseBR,
				Invoices: []reminders.Invoice{{ID: fmt.Sprintf("NF-%03d", i), DueDate: "2026-05-10", AmountCents: int64(100 + i)}},
			}, at)
			all = append(all, r)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := reminders.DiscardOpen(context.Background(), db, "c2", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b reminders.Record) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return all
}

// TestListDraftsPagination: walking the pages with nextCursor lists every draft the filters
// select exactly once, newest first, without bodies, and the last page has no nextCursor.
func TestListDraftsPagination(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		all := seedDrafts(t, e.db, 23)
		for _, tc := range []struct {
			args map[string]any
			keep func(reminders.Record) bool
		}{
			{map[string]any{}, func(reminders.Record) bool { return true }},
			{map[string]any{"customerId": "c1"}, func(r reminders.Record) bool { return r.CustomerID == "c1" }},
			{map[string]any{"state": "discarded"}, func(r reminders.Record) bool { return r.CustomerID == "c2" }},
			{map[string]any{"state": "draft", "customerId": "c2"}, func(reminders.Record) bool { return false }},
		} {
			var want []string
			for _, r := range all {
				if tc.keep(r) {
					want = append(want, r.ID)
				}
			}
			for _, limit := range []int{1, 4, 20, 100} {
				args := map[string]any{"limit": limit}
				for k, v := range tc.args {
					args[k] = v
				}
				var got []string
				pages := 0
				for {
					pages++
					page := decode[listPage](t, e.call(reader, collections.ListDraftsName, args))
					if len(page.Drafts) > limit {
						t.Fatalf("%v: a page of %d drafts, limit %d", args, len(page.Drafts), limit)
					}
					for _, d := range page.Drafts {
						got = append(got, d.ID)
					}
					if page.NextCursor == "" || pages > 30 {
						break
					}
					args["cursor"] = page.NextCursor
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%v: the drafts listed page by page (-want +got):\n%s", args, diff)
				}
				if wantPages := max(1, (len(want)+limit-1)/limit); pages != wantPages && pages != wantPages+1 {
					t.Errorf("%v: %d pages, want %d", args, pages, wantPages)
				}
			}
		}
		// The default page is 20 drafts; an item says everything but the body.
		res := e.call(reader, collections.ListDraftsName, map[string]any{})
		page := decode[listPage](t, res)
		if len(page.Drafts) != 20 || page.NextCursor == "" {
			t.Fatalf("default page: %d drafts, nextCursor %q; want 20 and a cursor", len(page.Drafts), page.NextCursor)
		}
		d, r := page.Drafts[0], all[0]
		if d.ID != r.ID || d.CustomerID != r.CustomerID || d.State != string(r.State) || d.Tone != "friendly" || d.Language != "pt-BR" ||
			d.Subject != r.Subject || d.InvoiceCount != 1 || d.TotalCents != r.TotalCents || d.CreatedAt != r.CreatedAt.Format(time.RFC3339Nano) {
			t.Errorf("first item %+v, want the draft %+v", d, r)
		}
		if strings.Contains(string(res.Structured), "body") || strings.Contains(string(res.Structured), "Olá") {
			t.Errorf("list_drafts answered a body: %s", res.Structured)
		}
		if ev := pipelinetest.Audited(t, e.db, collections.ListDraftsName); ev["allowed"] == 0 {
			t.Errorf("audit %v, want the reads audited allowed", ev)
		}
	})
}

// TestListDraftsCursorRefused: a cursor opens only as it was given, for the same filters; any
// other is refused with invalid_arguments naming cursor, and so are the bounds of the schema.
func TestListDraftsCursorRefused(t *testing.T) {
	eachEnv(t, testListDraftsCursorRefused)
}

func testListDraftsCursorRefused(t *testing.T, e *env) {
	seedDrafts(t, e.db, 6)
	page := decode[listPage](t, e.call(reader, collections.ListDraftsName, map[string]any{"customerId": "c1", "limit": 1}))
	cur := page.NextCursor
	if cur == "" {
		t.Fatal("no nextCursor")
	}
	flip := func(i int) string {
		b := []byte(cur)
		b[i] = map[bool]byte{true: 'A', false: 'B'}[b[i] != 'A']
		return string(b)
	}
	for name, args := range map[string]map[string]any{
		"another customer":  {"customerId": "c2", "limit": 1, "cursor": cur},
		"no customer":       {"limit": 1, "cursor": cur},
		"another state":     {"customerId": "c1", "state": "draft", "cursor": cur},
		"a changed version": {"customerId": "c1", "cursor": flip(0)},
		"a changed filter":  {"customerId": "c1", "cursor": flip(5)},
	} {
		res := e.call(reader, collections.ListDraftsName, args)
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments || res.Err.Field != "cursor" {
			t.Errorf("%s: %v %+v, want invalid_arguments on cursor", name, res.Kind, res.Err)
		}
	}
	for name, args := range map[string]map[string]any{
		"a short cursor":                  {"cursor": cur[:10]},
		"a padded cursor":                 {"cursor": cur + "="},
		"limit 0":                         {"limit": 0},
		"limit 101":                       {"limit": 101},
		"an unknown state":                {"state": "delivered"},
		"a blank customer":                {"customerId": "   "},
		"a customer id ending in a space": {"customerId": "c1 "},
		"a customer id after a tab":       {"customerId": "\tc1"},
		"a null state":                    {"state": nil},
		"another argument":                {"body": "x"},
	} {
		res := e.call(reader, collections.ListDraftsName, args)
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments {
			t.Errorf("%s: %v %+v, want invalid_arguments", name, res.Kind, res.Err)
		}
	}
	// A cursor opened with its filters moves on.
	next := decode[listPage](t, e.call(reader, collections.ListDraftsName, map[string]any{"customerId": "c1", "limit": 1, "cursor": cur}))
	if len(next.Drafts) != 1 || next.Drafts[0].ID == page.Drafts[0].ID {
		t.Errorf("the next page = %+v, want the draft after %s", next.Drafts, page.Drafts[0].ID)
	}
}

// recipient is whom the stored draft id is written to.
func recipient(t *testing.T, db store.DB, id string) reminders.Recipient {
	t.Helper()
	var to reminders.Recipient
	if err := db.QueryRow(context.Background(), `SELECT recipient_name, recipient_email FROM reminder_draft WHERE id = $1`, id).Scan(&to.Name, &to.Email); err != nil {
		t.Fatal(err)
	}
	return to
}

func drafts(t *testing.T, db store.DB) int {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM reminder_draft`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

type prepared struct {
	DraftID  string `json:"draftId"`
	State    string `json:"state"`
	Language string `json:"language"`
	Subject  string `json:"subject"`
	Preview  string `json:"preview"`
	Created  bool   `json:"created"`

	DraftsDiscarded int64 `json:"draftsDiscarded"`
}

// reminderArgs are prepare_reminder's arguments for customer c1 and three invoices.
func reminderArgs(key string) map[string]any {
	return map[string]any{
		"customer": map[string]any{"id": "c1", "name": "Padaria Pão Quente", "email": "financeiro@paoquente.com.br"},
		"invoices": []any{
			map[string]any{"id": "NF-3", "dueDate": "2026-06-10", "amountCents": 2599},
			map[string]any{"id": "NF-1", "dueDate": "2026-05-10", "amountCents": 150000},
			map[string]any{"id": "NF-2", "dueDate": "2026-05-31", "amountCents": 1},
		},
		"tone":           "friendly",
		"idempotencyKey": key,
	}
}

// TestPrepareReminderConcurrentKey: 50 concurrent identical calls with one key make one draft
// and one executed (allowed) audit event; every other call answers the same, or
// request_in_progress.
func TestPrepareReminderConcurrentKey(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const n = 50
		body, _ := pipelinetest.Race(t, n, func() pipeline.Result {
			return e.call(writer, collections.PrepareReminderName, reminderArgs("race-1"))
		})
		if got := drafts(t, e.db); got != 1 {
			t.Errorf("%d drafts stored, want 1", got)
		}
		ev := pipelinetest.Audited(t, e.db, collections.PrepareReminderName)
		if ev["allowed"] != 1 || ev["allowed"]+ev["replayed"]+ev["rejected"]+ev["failed"] != n || ev["unchanged"] != 0 {
			t.Errorf("audit %v, want exactly one allowed event and one event per call", ev)
		}
		if d := decode[prepared](t, pipeline.Result{Kind: pipeline.Complete, Structured: body}); !d.Created {
			t.Errorf("the answer %s says created false", body)
		}
	})
}

// TestPrepareReminderNaturalIdempotency: another key for the same customer, invoice set (in
// another order) and tone gets the same draft, created false, audited unchanged, with no new
// row; another tone is another draft; a new e-mail address is written and audited allowed.
func TestPrepareReminderNaturalIdempotency(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		first := decode[prepared](t, e.call(writer, collections.PrepareReminderName, reminderArgs("k1")))
		if !first.Created || first.State != "draft" || first.Language != "pt-BR" ||
			first.Subject != "Lembrete: 3 faturas em aberto, total de R$\u00a01.526,00" {
			t.Fatalf("first call = %+v", first)
		}
		args := reminderArgs("k2")
		invs := args["invoices"].([]any)
		slices.Reverse(invs)
		args["language"] = "en" // the open draft is found as it was written
		e.advance(time.Hour)
		again := decode[prepared](t, e.call(writer, collections.PrepareReminderName, args))
		if diff := cmp.Diff(prepared{DraftID: first.DraftID, State: "draft", Language: "pt-BR", Subject: first.Subject, Preview: first.Preview}, again); diff != "" {
			t.Errorf("another key, same reminder (-want +got):\n%s", diff)
		}
		if ev := pipelinetest.Audited(t, e.db, collections.PrepareReminderName); ev["allowed"] != 1 || ev["unchanged"] != 1 {
			t.Errorf("audit %v, want 1 allowed and 1 unchanged", ev)
		}
		firm := reminderArgs("k3")
		firm["tone"] = "firm"
		if d := decode[prepared](t, e.call(writer, collections.PrepareReminderName, firm)); !d.Created || d.DraftID == first.DraftID {
			t.Errorf("firm = %+v, want a new draft", d)
		}
		// A new e-mail address: the customer is updated, its two open drafts (to the old address)
		// discarded, and a new one written to the new address.
		moved := reminderArgs("k4")
		moved["customer"].(map[string]any)["email"] = "contas@paoquente.com.br"
		d := decode[prepared](t, e.call(writer, collections.PrepareReminderName, moved))
		if !d.Created || d.DraftID == first.DraftID || d.DraftsDiscarded != 2 {
			t.Errorf("a new e-mail address = %+v, want a new draft and 2 discarded", d)
		}
		if ev := pipelinetest.Audited(t, e.db, collections.PrepareReminderName); ev["allowed"] != 3 || ev["unchanged"] != 1 {
			t.Errorf("audit %v, want 3 allowed and 1 unchanged", ev)
		}
		c, err := customers.Get(context.Background(), e.db, "c1")
		if err != nil || c.Email != "contas@paoquente.com.br" || c.Status != customers.Contactable {
			t.Errorf("customer c1 = %+v, %v; want the new e-mail address, contactable", c, err)
		}
		if got := drafts(t, e.db); got != 3 {
			t.Errorf("%d drafts stored, want 3", got)
		}
		if refs, err := reminders.OpenDrafts(context.Background(), e.db, "c1"); err != nil || len(refs) != 1 || refs[0].ID != d.DraftID {
			t.Errorf("open drafts of c1 = %v, %v; want only %s", refs, err, d.DraftID)
		}
		if to := recipient(t, e.db, d.DraftID); to != (reminders.Recipient{Name: "Padaria Pão Quente", Email: "contas@paoquente.com.br"}) {
			t.Errorf("the new draft goes to %+v, want the new address", to)
		}
		if to := recipient(t, e.db, first.DraftID); to.Email != "financeiro@paoquente.com.br" {
			t.Errorf("the discarded draft records %+v, want the address it was written to", to)
		}
		// The same again: the new draft, nothing discarded or written.
		moved["idempotencyKey"] = "k5"
		again = decode[prepared](t, e.call(writer, collections.PrepareReminderName, moved))
		if again.Created || again.DraftID != d.DraftID || again.DraftsDiscarded != 0 {
			t.Errorf("the same call again = %+v, want %s, created false, none discarded", again, d.DraftID)
		}
		var by, actor string
		if err := e.db.QueryRow(context.Background(), `SELECT created_by, created_by_actor FROM reminder_draft WHERE id = $1`, first.DraftID).Scan(&by, &actor); err != nil || by != "ana" || actor != "ledger-copilot" {
			t.Errorf("created by %q, actor %q (%v); want ana, ledger-copilot", by, actor, err)
		}
	})
}

// setStatus sets customer id's contact status, as set_contact_status does, discarding its open
// drafts when it is do_not_contact.
func setStatus(t *testing.T, db store.DB, id string, ch customers.Change, now time.Time) {
	t.Helper()
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		if _, err := customers.SetStatus(ctx, tx, id, ch, now); err != nil {
			return err
		}
		if ch.Status == customers.DoNotContact {
			_, err := reminders.DiscardOpen(ctx, tx, id, now)
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPrepareReminderRefusesUncontactable: a customer who asked not to be contacted, or whose
// contact is paused, gets no draft (the pause's date in the message), and nothing of the call
// is kept: neither a draft nor the new name.
func TestPrepareReminderRefusesUncontactable(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		first := decode[prepared](t, e.call(writer, collections.PrepareReminderName, reminderArgs("k1")))
		setStatus(t, e.db, "c1", customers.Change{Status: customers.DoNotContact, Reason: "asked by phone", SetBy: "ana"}, e.clock())
		args := reminderArgs("k2")
		args["customer"].(map[string]any)["name"] = "Padaria Nova"
		res := e.call(writer, collections.PrepareReminderName, args)
		if res.Kind != pipeline.ToolError || res.Err.Code != customers.CodeDoNotContact || res.Err.Field != "customer.id" {
			t.Fatalf("do_not_contact: %v %+v, want customer_do_not_contact on customer.id", res.Kind, res.Err)
		}
		if c, _ := customers.Get(context.Background(), e.db, "c1"); c.Name != "Padaria Pão Quente" {
			t.Errorf("the refused call renamed the customer to %q", c.Name)
		}
		if refs, _ := reminders.OpenDrafts(context.Background(), e.db, "c1"); len(refs) != 0 || drafts(t, e.db) != 1 {
			t.Errorf("open drafts %v of %d; want the first draft %s discarded and no new one", refs, drafts(t, e.db), first.DraftID)
		}

		setStatus(t, e.db, "c1", customers.Change{Status: customers.Paused, PausedUntil: "2026-08-01", Reason: "negotiating", SetBy: "ana"}, e.clock())
		res = e.call(writer, collections.PrepareReminderName, reminderArgs("k3"))
		if res.Kind != pipeline.ToolError || res.Err.Code != customers.CodePaused || !strings.Contains(res.Err.Message, "2026-08-01") {
			t.Fatalf("paused: %v %+v, want customer_paused until 2026-08-01", res.Kind, res.Err)
		}
		if ev := pipelinetest.Audited(t, e.db, collections.PrepareReminderName); ev["allowed"] != 1 || ev["allowed"]+ev["unchanged"] != 1 {
			t.Errorf("audit %v, want the two refusals audited apart from the one allowed call", ev)
		}
		// From the day the pause ends, the customer is contactable again: a new draft (the first
		// was discarded).
		e.advance(31 * 24 * time.Hour)
		if d := decode[prepared](t, e.call(writer, collections.PrepareReminderName, reminderArgs("k4"))); !d.Created || d.DraftID == first.DraftID {
			t.Errorf("after the pause = %+v, want a new draft", d)
		}
	})
}

// TestPrepareReminderWaitsForStatus (PostgreSQL, where transactions overlap): a call that
// meets a contact status being set waits for it, and is refused once it commits — it never
// writes a draft the status change has already passed over.
func TestPrepareReminderWaitsForStatus(t *testing.T) {
	e := newEnv(t, storetest.AppRole(t, pg))
	decode[prepared](t, e.call(writer, collections.PrepareReminderName, reminderArgs("k1")))
	args := reminderArgs("k2")
	args["tone"] = "firm"
	if res := e.duringDoNotContact(t, "c1", args); res.Kind != pipeline.ToolError || res.Err.Code != customers.CodeDoNotContact {
		t.Errorf("a call racing do_not_contact: %v %+v, want customer_do_not_contact", res.Kind, res.Err)
	}
	if refs, err := reminders.OpenDrafts(context.Background(), e.db, "c1"); err != nil || len(refs) != 0 {
		t.Errorf("open drafts after do_not_contact = %v, %v; want none", refs, err)
	}
}

// duringDoNotContact makes prepare_reminder's call with args while customer id's
// do_not_contact is being set (the customer's row locked, its drafts not yet discarded),
// lets that commit once the call has had time to reach the lock, and returns the call's answer.
func (e *env) duringDoNotContact(t *testing.T, id string, args map[string]any) pipeline.Result {
	t.Helper()
	ctx := context.Background()
	locked, commit := make(chan struct{}), make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := customers.SetStatus(ctx, tx, id, customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "ana"}, e.clock()); err != nil {
				return err
			}
			close(locked)
			<-commit
			_, err := reminders.DiscardOpen(ctx, tx, id, e.clock())
			return err
		})
	}()
	<-locked
	done := make(chan pipeline.Result, 1)
	go func() { done <- e.call(writer, collections.PrepareReminderName, args) }()
	time.Sleep(300 * time.Millisecond) // the call reaches the customer's row lock
	close(commit)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return <-done
}

// TestPrepareReminderInvalid: what the schema cannot say is checked all the same, each
// refusal naming its field, and a refused call stores nothing.
func TestPrepareReminderInvalid(t *testing.T) {
	eachEnv(t, testPrepareReminderInvalid)
}

func testPrepareReminderInvalid(t *testing.T, e *env) {
	for _, tc := range []struct {
		name  string
		edit  func(a map[string]any)
		field string
	}{
		{"Feb 30", func(a map[string]any) { inv(a, 1)["dueDate"] = "2026-02-30" }, "invoices[1].dueDate"},
		{"a repeated id", func(a map[string]any) { inv(a, 2)["id"] = "NF-3" }, "invoices[2].id"},
		{"a bidi control in the name", func(a map[string]any) { a["customer"].(map[string]any)["name"] = "Pão\u202eQuente" }, "customer.name"},
		{"a display name", func(a map[string]any) { a["customer"].(map[string]any)["email"] = "Ana <ana@example.com>" }, "customer.email"},
		{"an id ending in a space", func(a map[string]any) { a["customer"].(map[string]any)["id"] = "c1 " }, "customer.id"},
		{"an id after a no-break space", func(a map[string]any) { a["customer"].(map[string]any)["id"] = "\u00a0c1" }, "customer.id"},
		{"a combining mark alone as an id", func(a map[string]any) { inv(a, 0)["id"] = "\u0301" }, "invoices[0].id"},
		{"no key", func(a map[string]any) { delete(a, "idempotencyKey") }, "idempotencyKey"},
		{"an unknown tone", func(a map[string]any) { a["tone"] = "angry" }, "tone"},
		{"an unknown language", func(a map[string]any) { a["language"] = "fr" }, "language"},
		{"no invoices", func(a map[string]any) { a["invoices"] = []any{} }, "invoices"},
		{"101 invoices", func(a map[string]any) {
			var many []any
			for i := range 101 {
				many = append(many, map[string]any{"id": fmt.Sprint(i), "dueDate": "2026-06-10", "amountCents": 1})
			}
			a["invoices"] = many
		}, "invoices"},
		{"a zero amount", func(a map[string]any) { inv(a, 0)["amountCents"] = 0 }, "invoices[0].amountCents"},
		{"an amount beyond R$ 10 billion", func(a map[string]any) { inv(a, 0)["amountCents"] = int64(1_000_000_000_001) }, "invoices[0].amountCents"},
		{"a body", func(a map[string]any) { a["body"] = "pay now" }, "body"},
	} {
		args := reminderArgs("bad-" + tc.name)
		tc.edit(args)
		res := e.call(writer, collections.PrepareReminderName, args)
		if res.Kind != pipeline.ToolError || res.Err.Code != failure.InvalidArguments || res.Err.Field != tc.field {
			t.Errorf("%s: %v %+v, want invalid_arguments on %s", tc.name, res.Kind, res.Err, tc.field)
		}
	}
	if n := drafts(t, e.db); n != 0 {
		t.Errorf("%d drafts stored by refused calls", n)
	}
	if _, err := customers.Get(context.Background(), e.db, "c1"); err != customers.ErrNotFound {
		t.Errorf("customers.Get after refused calls: %v, want not found", err)
	}
}

func inv(a map[string]any, i int) map[string]any { return a["invoices"].([]any)[i].(map[string]any) }

// TestPrepareReminderCustomerTextLiteral: a name that looks like a template action or HTML is
// written into the draft exactly as given, shown so in the preview, and kept out of the
// summary.
func TestPrepareReminderCustomerTextLiteral(t *testing.T) {
	eachEnv(t, testPrepareReminderCustomerTextLiteral)
}

func testPrepareReminderCustomerTextLiteral(t *testing.T, e *env) {
	for i, name := range []string{`{{.Secret}} {{template "body" .}}`, `<script>alert("x")</script> & Filhos`} {
		args := reminderArgs(fmt.Sprint("k", i))
		args["customer"].(map[string]any)["id"] = fmt.Sprint("c", i)
		args["customer"].(map[string]any)["name"] = name
		res := e.call(writer, collections.PrepareReminderName, args)
		d := decode[prepared](t, res)
		if !strings.HasPrefix(d.Preview, "Olá, "+name+"!\n\n") {
			t.Errorf("preview %q, want it to greet %q literally", d.Preview, name)
		}
		if strings.Contains(res.Summary, name) || strings.Contains(res.Summary, "Padaria") {
			t.Errorf("summary %q holds the customer's name", res.Summary)
		}
		var body string
		if err := e.db.QueryRow(context.Background(), `SELECT body FROM reminder_draft WHERE id = $1`, d.DraftID).Scan(&body); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(body, "Olá, "+name+"!") || !strings.HasPrefix(body, strings.TrimSuffix(d.Preview, "…")) {
			t.Errorf("stored body %q, want the name literally and the preview its start", body)
		}
		if n := utf8.RuneCountInString(d.Preview); n != 201 || !strings.HasSuffix(d.Preview, "…") {
			t.Errorf("preview of %d characters %q, want 200 and …", n, d.Preview)
		}
	}
}

// TestDoNotContactThroughTheTools: the flow through one pipeline. An agent prepares a
// reminder; the customer's do_not_contact, set by an agent with set_contact_status and
// confirmed in band, discards the draft (list_drafts shows it discarded); prepare_reminder then
// refuses the customer, and the refusal changes nothing.
func TestDoNotContactThroughTheTools(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		agent := &auth.Principal{Subject: "ana", ClientID: "assistant", Actor: "agent-7", Kind: auth.KindAgent,
			Scopes: []string{"collections:read", "reminders:write", "customers:write"}}
		draft := decode[prepared](t, e.call(agent, collections.PrepareReminderName, reminderArgs("k1")))

		_, done := e.confirmed(t, agent, collections.SetContactStatusName, `{"customerId":"c1","status":"do_not_contact","reason":"asked by e-mail","idempotencyKey":"s1"}`)
		if done.Kind != pipeline.Complete {
			t.Fatalf("confirmed set_contact_status: kind %d %+v", done.Kind, done.Err)
		}

		page := decode[listPage](t, e.call(agent, collections.ListDraftsName, map[string]any{"customerId": "c1"}))
		if len(page.Drafts) != 1 || page.Drafts[0].ID != draft.DraftID || page.Drafts[0].State != "discarded" {
			t.Errorf("c1's drafts after do_not_contact: %+v, want %s discarded", page.Drafts, draft.DraftID)
		}
		for _, key := range []string{"k1", "k2"} { // the first key replays its answer; a new one is refused
			res := e.call(agent, collections.PrepareReminderName, reminderArgs(key))
			if key == "k1" {
				if res.Kind != pipeline.Complete || decode[prepared](t, res).DraftID != draft.DraftID {
					t.Errorf("replay of k1: %v %+v, want the first answer", res.Kind, res.Err)
				}
				continue
			}
			if res.Kind != pipeline.ToolError || res.Err.Code != customers.CodeDoNotContact {
				t.Errorf("prepare_reminder after do_not_contact: %v %+v, want customer_do_not_contact", res.Kind, res.Err)
			}
		}
		if n := drafts(t, e.db); n != 1 {
			t.Errorf("%d drafts stored, want the one discarded", n)
		}
	})
}

// customerArgs are prepare_reminder's arguments (reminderArgs's invoices) for the customer id,
// name and email.
func customerArgs(key, id, name, email string) map[string]any {
	a := reminderArgs(key)
	a["customer"] = map[string]any{"id": id, "name": name, "email": email}
	return a
}

// TestPrepareReminderSameAddress: a customer who asked not to be contacted is not reached
// under another id with the same e-mail address, in any case — another spelling of its id,
// a new id, a look-alike — nor by moving another customer to that address; a pause is held
// the same way, with its date. The refusal names customer.email and no other customer, and
// the call stores nothing. A contactable customer sharing an address blocks nothing.
func TestPrepareReminderSameAddress(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		decode[prepared](t, e.call(writer, collections.PrepareReminderName, customerArgs("k1", "c-1", "Ana", "ana@example.com")))
		decode[prepared](t, e.call(writer, collections.PrepareReminderName, customerArgs("k2", "c-2", "Bia", "bia@example.com")))
		setStatus(t, e.db, "c-1", customers.Change{Status: customers.DoNotContact, Reason: "asked by phone", SetBy: "ana"}, e.clock())
		before := drafts(t, e.db)

		for i, tc := range []struct{ id, email string }{
			{"C-1", "ana@example.com"},
			{"c-1-new", "ana@example.com"},
			{"c\u20101", "ana@example.com"}, // U+2010 HYPHEN
			{"c-1-new", "ANA@Example.COM"},
			{"c-2", "Ana@example.com"}, // a contactable customer moved to the blocked address
		} {
			res := e.call(writer, collections.PrepareReminderName, customerArgs(fmt.Sprint("dnc", i), tc.id, "Ana Nova", tc.email))
			if res.Kind != pipeline.ToolError || res.Err.Code != customers.CodeDoNotContact || res.Err.Field != "customer.email" {
				t.Errorf("%q at %q: %v %+v, want customer_do_not_contact on customer.email", tc.id, tc.email, res.Kind, res.Err)
				continue
			}
			if strings.Contains(res.Err.Message, "c-1") || strings.Contains(res.Err.Message, "ana@") || strings.Contains(res.Err.Message, "Ana") {
				t.Errorf("%q: the refusal %q names the other customer or the address", tc.id, res.Err.Message)
			}
		}
		for _, id := range []string{"C-1", "c-1-new", "c\u20101"} {
			if _, err := customers.Get(ctx, e.db, id); err != customers.ErrNotFound {
				t.Errorf("customer %q after refused calls: %v, want not found", id, err)
			}
		}
		if c, _ := customers.Get(ctx, e.db, "c-2"); c.Email != "bia@example.com" || c.Name != "Bia" {
			t.Errorf("customer c-2 = %+v after a refused call, want it as it was", c)
		}
		if n := drafts(t, e.db); n != before {
			t.Errorf("%d drafts after refused calls, want %d", n, before)
		}

		// A pause on an address: refused with the date, in any case.
		decode[prepared](t, e.call(writer, collections.PrepareReminderName, customerArgs("k3", "c-3", "Caio", "caio@example.com")))
		setStatus(t, e.db, "c-3", customers.Change{Status: customers.Paused, PausedUntil: "2026-08-01", Reason: "negotiating", SetBy: "ana"}, e.clock())
		res := e.call(writer, collections.PrepareReminderName, customerArgs("k4", "c-4", "Caio", "CAIO@example.com"))
		if res.Kind != pipeline.ToolError || res.Err.Code != customers.CodePaused || res.Err.Field != "customer.email" || !strings.Contains(res.Err.Message, "2026-08-01") {
			t.Errorf("an address paused: %v %+v, want customer_paused until 2026-08-01 on customer.email", res.Kind, res.Err)
		}
		// Contactable customers sharing an address do not block each other.
		res = e.call(writer, collections.PrepareReminderName, customerArgs("k5", "c-5", "Bia Filial", "BIA@example.com"))
		if d := decode[prepared](t, res); !d.Created {
			t.Errorf("a second contactable customer at an address = %+v, want a new draft", d)
		}
		// From the day the pause ends, its address is open again.
		e.advance(31 * 24 * time.Hour)
		if d := decode[prepared](t, e.call(writer, collections.PrepareReminderName, customerArgs("k6", "c-4", "Caio", "CAIO@example.com"))); !d.Created {
			t.Errorf("after the pause = %+v, want a new draft", d)
		}
	})
}

// TestPrepareReminderWaitsForAddressStatus (PostgreSQL, where transactions overlap): a call
// for another customer id with the address of a customer whose do_not_contact is being set
// waits for it, and is refused once it commits.
func TestPrepareReminderWaitsForAddressStatus(t *testing.T) {
	e := newEnv(t, storetest.AppRole(t, pg))
	decode[prepared](t, e.call(writer, collections.PrepareReminderName, reminderArgs("k1")))
	args := customerArgs("k2", "c1-filial", "Padaria Pão Quente", "FINANCEIRO@paoquente.com.br")
	if res := e.duringDoNotContact(t, "c1", args); res.Kind != pipeline.ToolError || res.Err.Code != customers.CodeDoNotContact || res.Err.Field != "customer.email" {
		t.Errorf("a call racing do_not_contact on its address: %v %+v, want customer_do_not_contact on customer.email", res.Kind, res.Err)
	}
	if refs, err := reminders.OpenDrafts(context.Background(), e.db, "c1-filial"); err != nil || len(refs) != 0 {
		t.Errorf("open drafts of c1-filial = %v, %v; want none", refs, err)
	}
}

// TestPrepareReminderNameChange: a new name discards the open drafts that greet the old one,
// and the new draft greets the new name; the answer counts what it discarded.
func TestPrepareReminderNameChange(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		first := decode[prepared](t, e.call(writer, collections.PrepareReminderName, reminderArgs("k1")))
		renamed := reminderArgs("k2")
		renamed["customer"].(map[string]any)["name"] = "Padaria Pão Quente Ltda"
		d := decode[prepared](t, e.call(writer, collections.PrepareReminderName, renamed))
		if !d.Created || d.DraftID == first.DraftID || d.DraftsDiscarded != 1 || !strings.HasPrefix(d.Preview, "Olá, Padaria Pão Quente Ltda!") {
			t.Errorf("renamed = %+v, want a new draft greeting the new name, 1 discarded", d)
		}
		page := decode[listPage](t, e.call(reader, collections.ListDraftsName, map[string]any{"customerId": "c1", "state": "discarded"}))
		if len(page.Drafts) != 1 || page.Drafts[0].ID != first.DraftID {
			t.Errorf("discarded drafts of c1 = %+v, want %s", page.Drafts, first.DraftID)
		}
		if to := recipient(t, e.db, d.DraftID); to.Name != "Padaria Pão Quente Ltda" || to.Email != "financeiro@paoquente.com.br" {
			t.Errorf("the new draft is to %+v", to)
		}
	})
}

// TestPrepareReminderSharedAddressRace: concurrent calls for customers that share an e-mail
// address (some new, some stored) lock one another's rows in one order: every call
// completes — none deadlocks or fails — and each customer has its one open draft.
func TestPrepareReminderSharedAddressRace(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		const customers, calls = 4, 24
		decode[prepared](t, e.call(writer, collections.PrepareReminderName, customerArgs("k", "c-0", "Ana", "ana@example.com")))
		var wg sync.WaitGroup
		results := make([]pipeline.Result, calls)
		for i := range calls {
			wg.Go(func() {
				id := fmt.Sprint("c-", (customers-1)-i%customers) // every order of ids
				results[i] = e.call(writer, collections.PrepareReminderName, customerArgs(fmt.Sprint("k", i), id, "Ana", "ana@example.com"))
			})
		}
		wg.Wait()
		for i, res := range results {
			if res.Kind != pipeline.Complete {
				t.Errorf("call %d: %v %+v, want it complete", i, res.Kind, res.Err)
			}
		}
		for c := range customers {
			if refs, err := reminders.OpenDrafts(context.Background(), e.db, fmt.Sprint("c-", c)); err != nil || len(refs) != 1 {
				t.Errorf("open drafts of c-%d = %v, %v; want 1", c, refs, err)
			}
		}
	})
}
