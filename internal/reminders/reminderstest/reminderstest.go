// Package reminderstest writes reminder drafts straight into a store, for the tests and
// benchmarks that need many of them (the bulk sends'), faster than a tool call each, and waits
// for their delivery.
package reminderstest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
)

// Bulk writes, in one transaction, n customers C-0 … C-(n-1), each with its own address
// (contasI@mercado.example) and one open friendly draft in Portuguese for one invoice, written
// by ana through collector-bot; it returns the drafts' ids in that order.
func Bulk(tb testing.TB, db store.DB, n int) []string {
	tb.Helper()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		tb.Fatal(err)
	}
	at := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)
	ids := make([]string, 0, n)
	err = db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		for i := range n {
			c := customers.Record{ID: "C-" + strconv.Itoa(i), Name: "Mercado " + strconv.Itoa(i) + " Ltda", Email: "contas" + strconv.Itoa(i) + "@mercado.example"}
			if _, err := customers.Upsert(ctx, tx, c, at); err != nil {
				return err
			}
			r, _, err := reminders.Prepare(ctx, tx, tpl, reminders.Request{
				CustomerID: c.ID, To: reminders.Recipient{Name: c.Name, Email: c.Email}, Tone: reminders.Friendly, Language: reminders.PortugueseBR,
				Invoices:  []reminders.Invoice{{ID: "NF-" + strconv.Itoa(i), DueDate: "2026-05-10", AmountCents: int64(15000 + i)}},
				CreatedBy: "ana", CreatedByActor: "collector-bot",
			}, at)
			if err != nil {
				return err
			}
			ids = append(ids, r.ID)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// WaitSent waits until n drafts are recorded sent, failing the test after timeout; the failure
// says where the outbox's entries stand.
func WaitSent(tb testing.TB, db store.DB, n int, timeout time.Duration) {
	tb.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		var sent int64
		if err := db.QueryRow(context.Background(), `SELECT COUNT(*) FROM reminder_draft WHERE state = 'sent'`).Scan(&sent); err != nil {
			tb.Fatal(err)
		}
		if sent == int64(n) {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d drafts sent after %v, want %d (outbox entries by state: %s)", sent, timeout, n, entryStates(db))
		}
	}
}

// entryStates counts the outbox's entries by River's state, for a failure's message.
func entryStates(db store.DB) string {
	rows, err := db.Query(context.Background(), `SELECT state, COUNT(*) FROM river_job GROUP BY state ORDER BY state`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var states []string
	for rows.Next() {
		var s string
		var c int64
		if err := rows.Scan(&s, &c); err != nil {
			return err.Error()
		}
		states = append(states, s+" "+strconv.FormatInt(c, 10))
	}
	return strings.Join(states, ", ")
}
