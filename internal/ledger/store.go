package ledger

// The store half of the ledger: the records (migration 00170) and the
// derived cache beside them. Every function that writes a record writes,
// in the same transaction, the cache it changes (an invoice's allocated and
// written-off sums, state and open amount, open dispute and latest promise;
// a payment's amount left), so that a reader reads one row per invoice and
// the send-time check locks that row.
//
// Lock order, everywhere: the payment's row first, then the invoices' rows
// sorted by id, each set taken by one statement, so that two transactions
// never wait for each other in a cycle.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// The failure codes of the ledger's store, answered by the tools and the
// command line.
const (
	CodeInvoiceNotFound    failure.Code = "invoice_not_found"
	CodeInvoiceSettled     failure.Code = "invoice_settled"      // paid, void, written off
	CodeDraftStale         failure.Code = "draft_stale"          // disputed, promise pending, open amount differs
	CodeInvoiceHasPayments failure.Code = "invoice_has_payments" // amount/currency change with allocations
	CodePaymentNotFound    failure.Code = "payment_not_found"
	CodePaymentConflict    failure.Code = "payment_conflict"   // same (source, sourceRef), different amount/currency/date
	CodeAllocationRefused  failure.Code = "allocation_refused" // CheckAllocation's refusals, the message says which
	CodeDisputeOpen        failure.Code = "dispute_open"       // the invoice already has an open dispute
	CodeNoOpenDispute      failure.Code = "dispute_not_found"
)

// The errors the getters return, wrapped by the failures that answer them.
var (
	ErrInvoiceNotFound = errors.New("ledger: invoice not found")
	ErrPaymentNotFound = errors.New("ledger: payment not found")
)

// Actor is who records: the person's subject, and the agent acting for
// them ("" when the person acted).
type Actor struct{ Subject, Actor string }

// StoredInvoice is an invoice as the ledger holds it: the record as last
// upserted and what is derived from it and its payments, write-off,
// dispute and promises.
type StoredInvoice struct {
	InvoiceRecord
	Standing
	WrittenOffCents int64
	Dispute         *Dispute // the open dispute, nil when none
	Promise         *Promise // the latest promise, nil when none
	CreatedAt       time.Time
	UpdatedAt       time.Time
}

// PromisePending reports whether the invoice is under a promise to pay:
// its latest promise is dated today (YYYY-MM-DD) or later and it is not
// settled.
func (inv StoredInvoice) PromisePending(today string) bool {
	return inv.Promise != nil && inv.Promise.PromisedFor >= today && !inv.State.Settled()
}

// derive sets the invoice's standing from its amount, void flag and the
// sums of its allocations and write-off.
func (inv *StoredInvoice) derive() {
	inv.Standing = Derive(Invoice{AmountCents: inv.AmountCents, Void: inv.Void, AllocatedCents: inv.PaidCents, WrittenOffCents: inv.WrittenOffCents})
}

// invoiceColumns are ledger_invoice's columns as scanInvoice reads them,
// then the open dispute's and the latest promise's (invoiceFrom joins them).
const invoiceColumns = `i.id, i.customer_id, i.customer_name, i.amount_cents, i.currency, i.issue_date, i.due_date, i.void,
 i.pix_txid, i.our_number, i.boleto_line, i.reference, i.allocated_cents, i.written_off_cents, i.state, i.open_cents,
 i.dispute_id, i.promise_id, i.created_at, i.updated_at,
 COALESCE(d.id, ''), COALESCE(d.reason, ''), COALESCE(d.note, ''), COALESCE(d.opened_by, ''), COALESCE(d.opened_by_actor, ''), COALESCE(d.opened_at, 0),
 COALESCE(p.id, ''), COALESCE(p.amount_cents, 0), COALESCE(p.promised_for, ''), COALESCE(p.channel, ''), COALESCE(p.note, ''),
 COALESCE(p.recorded_by, ''), COALESCE(p.recorded_by_actor, ''), COALESCE(p.created_at, 0)`

const invoiceFrom = ` FROM ledger_invoice i` + invoiceJoins

const invoiceJoins = `
 LEFT JOIN ledger_dispute d ON d.id = i.dispute_id
 LEFT JOIN ledger_promise p ON p.id = i.promise_id`

// scanInvoice reads a row of invoiceColumns. consistent is false when the
// row's cache names a dispute or promise the join did not find: a row
// locked after the statement's snapshot was taken (PostgreSQL re-reads the
// locked row, not the joined ones), to be read again.
func scanInvoice(row store.Row) (inv StoredInvoice, consistent bool, err error) {
	var (
		disputeID, promiseID               string
		created, updated, opened, promised int64
		d                                  Dispute
		p                                  Promise
		state                              string
		reason                             string
	)
	err = row.Scan(&inv.InvoiceID, &inv.CustomerID, &inv.CustomerName, &inv.AmountCents, &inv.Currency, &inv.IssueDate, &inv.DueDate, &inv.Void,
		&inv.PixTxID, &inv.OurNumber, &inv.BoletoLine, &inv.Reference, &inv.PaidCents, &inv.WrittenOffCents, &state, &inv.OpenCents,
		&disputeID, &promiseID, &created, &updated,
		&d.ID, &reason, &d.Note, &d.OpenedBy.Subject, &d.OpenedBy.Actor, &opened,
		&p.ID, &p.AmountCents, &p.PromisedFor, &p.Channel, &p.Note, &p.By.Subject, &p.By.Actor, &promised)
	if err != nil {
		return StoredInvoice{}, false, err
	}
	inv.State = State(state)
	inv.CreatedAt, inv.UpdatedAt = micros(created), micros(updated)
	if d.ID != "" {
		d.InvoiceID, d.Reason, d.OpenedAt = inv.InvoiceID, DisputeReason(reason), micros(opened)
		inv.Dispute = &d
	}
	if p.ID != "" {
		p.InvoiceID, p.At = inv.InvoiceID, micros(promised)
		inv.Promise = &p
	}
	return inv, d.ID == disputeID && p.ID == promiseID, nil
}

func micros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// queryInvoices runs a query of invoiceColumns and calls fn with each
// invoice, in the query's order. When a row is inconsistent (scanInvoice),
// stale is true and fn is not called for it.
func queryInvoices(ctx context.Context, q store.Querier, sql string, args []any, fn func(StoredInvoice) error) (stale bool, err error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		inv, ok, err := scanInvoice(rows)
		if err != nil {
			return false, err
		}
		if !ok {
			stale = true
			continue
		}
		if err := fn(inv); err != nil {
			return false, err
		}
	}
	return stale, rows.Err()
}

// GetInvoice returns the invoice id, or ErrInvoiceNotFound.
func GetInvoice(ctx context.Context, q store.Querier, id string) (StoredInvoice, error) {
	m, err := GetInvoices(ctx, q, []string{id})
	if err != nil {
		return StoredInvoice{}, err
	}
	inv, ok := m[id]
	if !ok {
		return StoredInvoice{}, ErrInvoiceNotFound
	}
	return inv, nil
}

// GetInvoices returns the invoices of ids the ledger knows, by id.
func GetInvoices(ctx context.Context, q store.Querier, ids []string) (map[string]StoredInvoice, error) {
	m, err := readInvoices(ctx, q, ids, "")
	if err != nil {
		return nil, fmt.Errorf("ledger: get invoices: %w", err)
	}
	return m, nil
}

// readInvoices reads the invoices ids, in id order, with the locking
// clause lock (PostgreSQL's; "" for none).
func readInvoices(ctx context.Context, q store.Querier, ids []string, lock string) (map[string]StoredInvoice, error) {
	m := make(map[string]StoredInvoice, len(ids))
	if len(ids) == 0 {
		return m, nil
	}
	sql := `SELECT ` + invoiceColumns + invoiceFrom + ` WHERE ` + store.InList(dialect(q), "i.id", "$1") + ` ORDER BY i.id` + lock
	add := func(inv StoredInvoice) error { m[inv.InvoiceID] = inv; return nil }
	stale, err := queryInvoices(ctx, q, sql, []any{jsonList(ids)}, add)
	if err != nil || !stale {
		return m, err
	}
	// The rows are locked now: a statement of its own sees what was
	// committed before the lock was granted.
	stale, err = queryInvoices(ctx, q, `SELECT `+invoiceColumns+invoiceFrom+` WHERE `+store.InList(dialect(q), "i.id", "$1"), []any{jsonList(ids)}, add)
	if err == nil && stale {
		err = errors.New("an invoice's dispute or promise changed while it was read")
	}
	return m, err
}

// lockInvoices reads the invoices ids locked for update (PostgreSQL; SQLite's
// transaction holds the database), in id order.
func lockInvoices(ctx context.Context, tx store.Tx, ids []string) (map[string]StoredInvoice, error) {
	ids = sortedUnique(ids)
	return readInvoices(ctx, tx, ids, forUpdate(tx.Dialect(), "i"))
}

func sortedUnique(ss []string) []string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return slices.Compact(ss)
}

// cacheColumns are the derived columns saveCache writes.
var cacheColumns = []column{{"id", "text"}, {"allocated_cents", "bigint"}, {"written_off_cents", "bigint"},
	{"state", "text"}, {"open_cents", "bigint"}, {"updated_at", "bigint"}}

// saveCache writes the derived cache of invs (derived already), at now.
func saveCache(ctx context.Context, tx store.Tx, invs []StoredInvoice, now time.Time) error {
	at := now.UnixMicro()
	d := tx.Dialect()
	return writeRows(ctx, tx, len(invs), len(cacheColumns),
		func(n int) string { return updateSQL(d, "ledger_invoice", cacheColumns, n) },
		func(i int) []any {
			v := invs[i]
			return []any{v.InvoiceID, v.PaidCents, v.WrittenOffCents, string(v.State), v.OpenCents, at}
		}, nil)
}

// IndexError is a refusal of one record of a batch: its index in the batch
// and the failure.
type IndexError struct {
	Index int
	Err   *failure.Error
}

func (e *IndexError) Error() string { return "record " + strconv.Itoa(e.Index) + ": " + e.Err.Error() }
func (e *IndexError) Unwrap() error { return e.Err }

// UpsertCounts is what UpsertInvoices did.
type UpsertCounts struct{ Created, Updated, Unchanged int }

// recordColumns are ledger_invoice's columns of an InvoiceRecord, then the
// cache's and the times UpsertInvoices writes.
var recordColumns = []string{"id", "customer_id", "customer_name", "amount_cents", "currency", "issue_date", "due_date", "void",
	"pix_txid", "our_number", "boleto_line", "reference", "allocated_cents", "written_off_cents", "state", "open_cents",
	"created_at", "updated_at"}

// upsertUpdate is what a changed invoice's row takes: everything but when
// it was created and its dispute and promise.
var upsertUpdate = func() string {
	s := "ON CONFLICT (id) DO UPDATE SET "
	for i, c := range recordColumns[1 : len(recordColumns)-2] {
		if i > 0 {
			s += ", "
		}
		s += c + " = excluded." + c
	}
	return s + ", updated_at = excluded.updated_at"
}()

// createLock is the key of the PostgreSQL advisory lock that orders the
// creation of invoices with write-offs of invoices the ledger does not
// know yet: UpsertInvoices holds it shared while it creates invoices and
// reads their write-offs, WrittenOff exclusively when its invoice is not
// there. Without it, a write-off committed while its invoice is first
// imported could be seen by neither ("ledger" in ASCII).
const createLock int64 = 0x6c6564676572

// UpsertInvoices writes validated records (InvoiceRecord.Validate done by
// the caller), all or nothing in tx, in batches of multi-row statements: an
// unknown invoice is created (taking the write-off it may already have), a
// known one is updated when something differs, and its standing derived
// again (a void flag or an amount change changes it). Changing the amount
// or currency of an invoice with allocations is refused with *IndexError
// of CodeInvoiceHasPayments; a record repeating an invoice of the batch
// with invalid_arguments. Audit is the caller's.
func UpsertInvoices(ctx context.Context, tx store.Tx, recs []InvoiceRecord, now time.Time) (UpsertCounts, error) {
	var counts UpsertCounts
	first := make(map[string]int, len(recs))
	for i, r := range recs {
		if j, dup := first[r.InvoiceID]; dup {
			return counts, &IndexError{Index: i, Err: &failure.Error{Code: failure.InvalidArguments, Field: "invoiceId",
				Message: fmt.Sprintf("repeats the invoice of record %d; nothing was written", j)}}
		}
		first[r.InvoiceID] = i
	}
	order := make([]int, len(recs))
	for i := range order {
		order[i] = i
	}
	// Rows are locked in id order, so that two batches sharing invoices
	// cannot each hold one the other waits for.
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(recs[a].InvoiceID, recs[b].InvoiceID) })
	lost, err := upsertRound(ctx, tx, recs, order, now, &counts)
	if err != nil {
		return UpsertCounts{}, err
	}
	if len(lost) > 0 {
		// Another transaction created these between our read and our
		// insert: they exist now, and are updated as known ones.
		counts.Created -= len(lost)
		if again, err := upsertRound(ctx, tx, recs, lost, now, &counts); err != nil || len(again) > 0 {
			return UpsertCounts{}, errors.Join(err, errors.New("ledger: upsert invoices: an invoice created twice"))
		}
	}
	return counts, nil
}

// upsertRound upserts recs[order…] (order sorted by id) and returns those
// it meant to create but found created meanwhile.
func upsertRound(ctx context.Context, tx store.Tx, recs []InvoiceRecord, order []int, now time.Time, counts *UpsertCounts) ([]int, error) {
	d := tx.Dialect()
	ids := make([]string, len(order))
	for k, i := range order {
		ids[k] = recs[i].InvoiceID
	}
	known := make(map[string]StoredInvoice, len(ids))
	const chunk = 5000
	read := func(ids []string, lock string) error {
		for start := 0; start < len(ids); start += chunk {
			err := scanRows(ctx, tx, `SELECT `+plainInvoiceColumns+` FROM ledger_invoice WHERE `+store.InList(d, "id", "$1")+` ORDER BY id`+lock,
				[]any{jsonList(ids[start:min(len(ids), start+chunk)])}, func(r store.Rows) error {
					inv, err := scanPlainInvoice(r)
					known[inv.InvoiceID] = inv
					return err
				})
			if err != nil {
				return fmt.Errorf("ledger: upsert invoices: %w", err)
			}
		}
		return nil
	}
	// Read everything, then lock and read again only what changes: an
	// unchanged invoice is not written, and locking a row costs a write.
	if err := read(ids, ""); err != nil {
		return nil, err
	}
	if d == store.Postgres {
		var touch []string
		for _, i := range order {
			if old, ok := known[recs[i].InvoiceID]; ok && old.InvoiceRecord != recs[i] {
				touch = append(touch, recs[i].InvoiceID)
			}
		}
		if err := read(touch, forUpdate(d, "")); err != nil {
			return nil, err
		}
	}
	var create, change []StoredInvoice
	var createIdx []int
	for _, i := range order {
		r := recs[i]
		old, ok := known[r.InvoiceID]
		if !ok {
			create = append(create, StoredInvoice{InvoiceRecord: r})
			createIdx = append(createIdx, i)
			continue
		}
		if old.InvoiceRecord == r {
			counts.Unchanged++
			continue
		}
		if old.PaidCents > 0 && (old.AmountCents != r.AmountCents || old.Currency != r.Currency) {
			field := "amountCents"
			if old.AmountCents == r.AmountCents {
				field = "currency"
			}
			return nil, &IndexError{Index: i, Err: &failure.Error{Code: CodeInvoiceHasPayments, Field: field,
				Message: fmt.Sprintf("invoice %s has payments allocated: its amount and currency cannot change; nothing was written", r.InvoiceID)}}
		}
		inv := old
		inv.InvoiceRecord = r
		inv.derive()
		change = append(change, inv)
	}
	if err := writeUpserts(ctx, tx, change, now, upsertUpdate); err != nil {
		return nil, fmt.Errorf("ledger: upsert invoices: %w", err)
	}
	counts.Updated += len(change)
	if len(create) == 0 {
		return nil, nil
	}
	if d == store.Postgres {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, createLock); err != nil {
			return nil, fmt.Errorf("ledger: upsert invoices: %w", err)
		}
	}
	woff := make(map[string]int64)
	for start := 0; start < len(create); start += chunk {
		part := create[start:min(len(create), start+chunk)]
		cids := make([]string, len(part))
		for k, c := range part {
			cids[k] = c.InvoiceID
		}
		err := scanRows(ctx, tx, `SELECT invoice_id, amount_cents FROM write_off WHERE `+store.InList(d, "invoice_id", "$1"),
			[]any{jsonList(cids)}, func(r store.Rows) error {
				var id string
				var cents int64
				err := r.Scan(&id, &cents)
				woff[id] = cents
				return err
			})
		if err != nil {
			return nil, fmt.Errorf("ledger: upsert invoices: write-offs: %w", err)
		}
	}
	for k := range create {
		create[k].WrittenOffCents = woff[create[k].InvoiceID]
		create[k].derive()
	}
	created := make(map[string]bool, len(create))
	at := now.UnixMicro()
	err := writeInvoices(ctx, tx, create, at, "ON CONFLICT (id) DO NOTHING RETURNING id", func(r store.Rows) error {
		var id string
		err := r.Scan(&id)
		created[id] = true
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: upsert invoices: %w", err)
	}
	var lost []int
	for k, c := range create {
		if !created[c.InvoiceID] {
			lost = append(lost, createIdx[k])
		}
	}
	counts.Created += len(create)
	return lost, nil
}

func upsertArgs(v StoredInvoice, at int64) []any {
	return []any{v.InvoiceID, v.CustomerID, v.CustomerName, v.AmountCents, v.Currency, v.IssueDate, v.DueDate, v.Void,
		v.PixTxID, v.OurNumber, v.BoletoLine, v.Reference, v.PaidCents, v.WrittenOffCents, string(v.State), v.OpenCents, at, at}
}

// writeUpserts writes invs whole with the conflict clause onConflict.
func writeUpserts(ctx context.Context, tx store.Tx, invs []StoredInvoice, now time.Time, onConflict string) error {
	return writeInvoices(ctx, tx, invs, now.UnixMicro(), onConflict, nil)
}

// recordTypes are recordColumns' PostgreSQL types.
var recordTypes = []string{"text", "text", "text", "bigint", "text", "text", "text", "boolean", "text", "text", "text", "text",
	"bigint", "bigint", "text", "bigint", "bigint", "bigint"}

// pgChunk is how many invoices one PostgreSQL statement writes.
const pgChunk = 10000

// writeInvoices inserts invs whole, created and updated at at, then suffix
// (a conflict clause, a RETURNING read by fn when fn is not nil). On
// PostgreSQL the rows go as one array per column, unnested: a statement
// of 18 parameters whatever the rows, parsed and planned at once, where a
// VALUES list of thousands of rows costs more to parse than to write.
func writeInvoices(ctx context.Context, tx store.Tx, invs []StoredInvoice, at int64, suffix string, fn func(store.Rows) error) error {
	if tx.Dialect() != store.Postgres {
		return writeRows(ctx, tx, len(invs), len(recordColumns),
			func(n int) string { return insertSQL(tx.Dialect(), "ledger_invoice", recordColumns, n, suffix) },
			func(k int) []any { return upsertArgs(invs[k], at) }, fn)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO ledger_invoice (" + strings.Join(recordColumns, ", ") + ") SELECT * FROM unnest(")
	for i, t := range recordTypes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("$" + strconv.Itoa(i+1) + "::" + t + "[]")
	}
	b.WriteString(") " + suffix)
	sql := b.String()
	for start := 0; start < len(invs); start += pgChunk {
		part := invs[start:min(len(invs), start+pgChunk)]
		cols := make([][]string, 10)
		var amounts, alloc, woff, open, times []int64
		var void []bool
		for _, v := range part {
			for i, s := range []string{v.InvoiceID, v.CustomerID, v.CustomerName, v.Currency, v.IssueDate, v.DueDate,
				v.PixTxID, v.OurNumber, v.BoletoLine, v.Reference} {
				cols[i] = append(cols[i], s)
			}
			amounts, alloc, woff, open = append(amounts, v.AmountCents), append(alloc, v.PaidCents), append(woff, v.WrittenOffCents), append(open, v.OpenCents)
			void, times = append(void, v.Void), append(times, at)
		}
		states := make([]string, len(part))
		for i, v := range part {
			states[i] = string(v.State)
		}
		args := []any{cols[0], cols[1], cols[2], amounts, cols[3], cols[4], cols[5], void, cols[6], cols[7], cols[8], cols[9],
			alloc, woff, states, open, times, times}
		var err error
		if fn == nil {
			_, err = tx.Exec(ctx, sql, args...)
		} else {
			err = scanRows(ctx, tx, sql, args, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// scanRows runs a query and calls fn with each row.
func scanRows(ctx context.Context, q store.Querier, sql string, args []any, fn func(store.Rows) error) error {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// plainInvoiceColumns are ledger_invoice's own columns, without the joins.
const plainInvoiceColumns = `id, customer_id, customer_name, amount_cents, currency, issue_date, due_date, void,
 pix_txid, our_number, boleto_line, reference, allocated_cents, written_off_cents, state, open_cents, created_at, updated_at`

func scanPlainInvoice(row store.Row) (StoredInvoice, error) {
	var inv StoredInvoice
	var state string
	var created, updated int64
	err := row.Scan(&inv.InvoiceID, &inv.CustomerID, &inv.CustomerName, &inv.AmountCents, &inv.Currency, &inv.IssueDate, &inv.DueDate, &inv.Void,
		&inv.PixTxID, &inv.OurNumber, &inv.BoletoLine, &inv.Reference, &inv.PaidCents, &inv.WrittenOffCents, &state, &inv.OpenCents, &created, &updated)
	inv.State = State(state)
	inv.CreatedAt, inv.UpdatedAt = micros(created), micros(updated)
	return inv, err
}

// WrittenOff is called by writeoffs.Record in its transaction: the
// invoice's cache takes the write-off of cents (an invoice has one). It
// does nothing when the ledger does not know the invoice: UpsertInvoices
// reads write_off for the invoices it creates, so the order of the two
// does not matter.
func WrittenOff(ctx context.Context, tx store.Tx, invoiceID string, cents int64, now time.Time) error {
	m, err := lockInvoices(ctx, tx, []string{invoiceID})
	if err == nil && len(m) == 0 && tx.Dialect() == store.Postgres {
		// An import creating it may be in flight: wait for it (createLock),
		// then look again.
		if _, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, createLock); err == nil {
			m, err = lockInvoices(ctx, tx, []string{invoiceID})
		}
	}
	if err != nil {
		return fmt.Errorf("ledger: written off: %w", err)
	}
	inv, ok := m[invoiceID]
	if !ok {
		return nil
	}
	inv.WrittenOffCents = cents
	inv.derive()
	if err := saveCache(ctx, tx, []StoredInvoice{inv}, now); err != nil {
		return fmt.Errorf("ledger: written off: %w", err)
	}
	return nil
}

// Expected is what a draft says of one of its invoices: its id and the
// open amount it asks for.
type Expected struct {
	InvoiceID string
	OpenCents int64
}

// Verdict is the send-time check of one invoice of a draft.
type Verdict struct {
	InvoiceID string
	Known     bool          // false: not in the ledger (payment cannot be checked)
	Invoice   StoredInvoice // when Known
	Code      failure.Code  // "" sendable; CodeInvoiceSettled; CodeDraftStale
	Why       string        // "paid", "void", "written off", "disputed", "promise to pay on 2026-12-10", "open amount is now R$ …"
}

// CheckContact is the send-time check of a draft's invoices, in one round
// trip: it reads them locked against change (FOR SHARE on PostgreSQL, in id
// order; SQLite's write transaction already serializes), so that a payment
// committed before the send's transaction is seen and one after it waits
// for the send to commit. A verdict per expected invoice, in order: settled
// (paid, void, written off) refuses with CodeInvoiceSettled; disputed, under
// a promise pending on today (YYYY-MM-DD) or with an open amount other than
// expected with CodeDraftStale.
func CheckContact(ctx context.Context, tx store.Tx, today string, expect []Expected) ([]Verdict, error) {
	ids := make([]string, len(expect))
	for i, e := range expect {
		ids[i] = e.InvoiceID
	}
	lock := ""
	if tx.Dialect() == store.Postgres {
		lock = " FOR SHARE OF i"
	}
	m, err := readInvoices(ctx, tx, sortedUnique(ids), lock)
	if err != nil {
		return nil, fmt.Errorf("ledger: check contact: %w", err)
	}
	out := make([]Verdict, len(expect))
	for i, e := range expect {
		inv, ok := m[e.InvoiceID]
		out[i] = Verdict{InvoiceID: e.InvoiceID, Known: ok}
		if ok {
			out[i].Invoice = inv
			out[i].Code, out[i].Why = verdict(inv, e.OpenCents, today)
		}
	}
	return out, nil
}

// verdict decides whether a contact about inv, expecting open cents of
// it, may go out on today.
func verdict(inv StoredInvoice, open int64, today string) (failure.Code, string) {
	switch {
	case inv.State == StatePaid:
		return CodeInvoiceSettled, "paid"
	case inv.State == StateVoid:
		return CodeInvoiceSettled, "void"
	case inv.State == StateWrittenOff:
		return CodeInvoiceSettled, "written off"
	case inv.Dispute != nil:
		return CodeDraftStale, "disputed"
	case inv.PromisePending(today):
		return CodeDraftStale, "promise to pay on " + inv.Promise.PromisedFor
	case inv.OpenCents != open:
		return CodeDraftStale, "open amount is now " + value.FormatMoney(inv.OpenCents, inv.Currency)
	}
	return "", ""
}

// notFound is the failure of an invoice the ledger does not know.
func notFound(id string) *failure.Error {
	return &failure.Error{Code: CodeInvoiceNotFound, Field: "invoiceId", Message: "the ledger has no invoice " + id, Err: ErrInvoiceNotFound}
}

// idProblem is the rule of invoice and customer ids (customers.IDProblem).
func idProblem(s string) string { return customers.IDProblem(s) }
