package collections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// Issue 12's tools measured through pipeline.Do, on both dialects, against the yardstick
// (storetest.Yardstick) in the same run. See docs/benchmarks.md, "Issue 12's tools".
const (
	storedDrafts    = 1000 // the drafts in the store when the reads are measured
	draftCustomers  = 100  // customers of those drafts: 10 open drafts each
	statusCustomers = 1000 // customers whose status set_contact_status changes
)

// toolBench is the product's pipeline on one migrated store holding storedDrafts drafts,
// written through prepare_reminder, and the calls measured on it.
type toolBench struct {
	e     *env
	n     atomic.Int64 // calls made: keys and customers are drawn from it
	fresh atomic.Int64 // drafts written after the stored ones
	sets  atomic.Int64 // set_contact_status calls that change a status
	page2 string       // a list_drafts cursor to the second page of every draft
}

func newToolBench(b *testing.B, db store.DB) *toolBench {
	b.Helper()
	e := newEnv(b, db)
	tb := &toolBench{e: e}
	for i := range int64(storedDrafts) {
		if err := complete(e.do(agent, modern, collections.PrepareReminderName, tb.reminder(i)), `"created":true`); err != nil {
			b.Fatal(err)
		}
	}
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		for i := range statusCustomers {
			r := customers.Record{ID: "S-" + strconv.Itoa(i), Name: "Mercado " + strconv.Itoa(i), Email: "contas@mercado.example"}
			if _, err := customers.Upsert(ctx, tx, r, e.clock()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	res := e.do(reader, modern, collections.ListDraftsName, `{}`)
	var page listPage
	if err := complete(res, `"nextCursor"`); err != nil {
		b.Fatal(err)
	}
	if err := json.Unmarshal(res.Structured, &page); err != nil {
		b.Fatal(err)
	}
	tb.page2 = `{"cursor":"` + page.NextCursor + `"}`
	return tb
}

// reminder is prepare_reminder's arguments for draft i: customer C-(i mod draftCustomers),
// three invoices of its own, under a new idempotency key.
func (tb *toolBench) reminder(i int64) string {
	return fmt.Sprintf(`{"customer":{"id":"C-%d","name":"Padaria Pão Quente %[1]d","email":"financeiro%[1]d@paoquente.example"},`+
		`"invoices":[{"id":"NF-%[2]d-1","dueDate":"2026-05-10","amountCents":150000},{"id":"NF-%[2]d-2","dueDate":"2026-05-31","amountCents":%[2]d},`+
		`{"id":"NF-%[2]d-3","dueDate":"2026-06-10","amountCents":2599}],"tone":"friendly","idempotencyKey":"k-%[3]d"}`,
		i%draftCustomers, i+1, tb.n.Add(1))
}

// prepareNew writes a new draft.
func (tb *toolBench) prepareNew() error {
	i := storedDrafts + tb.fresh.Add(1)
	return complete(tb.e.do(agent, modern, collections.PrepareReminderName, tb.reminder(i)), `"created":true`)
}

// prepareAgain asks again, under a new key, for one of the stored drafts: answered from the
// draft, nothing written but the call's audit event and key.
func (tb *toolBench) prepareAgain() error {
	i := tb.n.Load() % storedDrafts
	return complete(tb.e.do(agent, modern, collections.PrepareReminderName, tb.reminder(i)), `"created":false`)
}

// setStatus sets, as a person, customer S-(n mod statusCustomers) paused and, on the next
// round over them, contactable again: a change every call.
func (tb *toolBench) setStatus() error {
	i := tb.sets.Add(1) - 1
	status := `"status":"paused","pausedUntil":"2026-12-15"`
	if i/statusCustomers%2 == 1 {
		status = `"status":"contactable"`
	}
	args := `{"customerId":"S-` + strconv.FormatInt(i%statusCustomers, 10) + `",` + status + `,"reason":"renegotiating","idempotencyKey":"k-` + strconv.FormatInt(tb.n.Add(1), 10) + `"}`
	return complete(tb.e.do(human, modern, collections.SetContactStatusName, args), `"changed":true`)
}

// setSameStatus sets, as a person, the status a draft's customer already has: no change.
func (tb *toolBench) setSameStatus() error {
	n := tb.n.Add(1)
	args := `{"customerId":"C-` + strconv.FormatInt(n%draftCustomers, 10) + `","status":"contactable","reason":"paid","idempotencyKey":"k-` + strconv.FormatInt(n, 10) + `"}`
	return complete(tb.e.do(human, modern, collections.SetContactStatusName, args), `"changed":false`)
}

func (tb *toolBench) getCustomer() error {
	args := `{"customerId":"C-` + strconv.FormatInt(tb.n.Add(1)%draftCustomers, 10) + `"}`
	return complete(tb.e.do(reader, modern, collections.GetCustomerName, args), `"openDrafts":[{`)
}

func (tb *toolBench) listDrafts(args string) func() error {
	return func() error {
		return complete(tb.e.do(reader, modern, collections.ListDraftsName, args), `"nextCursor"`)
	}
}

// complete says why res is not a complete answer containing want.
func complete(res pipeline.Result, want string) error {
	if res.Kind != pipeline.Complete {
		return fmt.Errorf("kind %d, %v", res.Kind, res.Err)
	}
	if !bytes.Contains(res.Structured, []byte(want)) {
		return fmt.Errorf("answer %s, want %s in it", res.Structured, want)
	}
	return nil
}

// cases are the calls measured, reads first: they find exactly storedDrafts drafts.
func (tb *toolBench) cases() []storetest.Case {
	return []storetest.Case{
		{Name: "get_customer", Call: tb.getCustomer},
		{Name: "list_drafts/first_page", Call: tb.listDrafts(`{}`)},
		{Name: "list_drafts/second_page", Call: tb.listDrafts(tb.page2)},
		{Name: "list_drafts/customer", Call: tb.listDrafts(`{"customerId":"C-7","limit":5}`)},
		{Name: "prepare_reminder/new", Call: tb.prepareNew},
		{Name: "prepare_reminder/repeat", Call: tb.prepareAgain},
		{Name: "set_contact_status/change", Call: tb.setStatus},
		{Name: "set_contact_status/same", Call: tb.setSameStatus},
	}
}

func toolCases(b *testing.B, db store.DB) []storetest.Case { return newToolBench(b, db).cases() }

// BenchmarkIssue12Tools measures each call with storetest.Parallel (8 goroutines on 2 cores),
// on SQLite and on PostgreSQL (pgtest, as its owner), against the yardstick in the same run.
func BenchmarkIssue12Tools(b *testing.B) { storetest.BenchCases(b, pg, toolCases) }

// BenchmarkIssue12RoundTrips counts each call's round trips on PostgreSQL.
func BenchmarkIssue12RoundTrips(b *testing.B) { storetest.BenchRoundTrips(b, pg, toolCases) }
