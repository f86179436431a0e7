package ledger

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// PaymentPrefix begins every payment's id (ident).
const PaymentPrefix = "pay_"

// RuleManual is an allocation a person or an agent chose (Allocate).
const RuleManual Rule = "manual"

// PaymentRecord is a payment as it comes in: a line of a bank's return
// file or statement, a row of a CSV, an agent's record.
type PaymentRecord struct {
	Source      string `json:"source"`              // "cnab240:<bank code>", "ofx:<bank>/<account>", "csv:<file name>", "agent"
	SourceRef   string `json:"sourceRef"`           // its identity in the source (FITID, nosso número + date, the agent's reference)
	AmountCents int64  `json:"amountCents"`         // > 0
	Currency    string `json:"currency,omitempty"`  // BRL when empty
	PaidOn      string `json:"paidOn"`              // YYYY-MM-DD
	Method      Method `json:"method"`              // pix | boleto | transfer | card | other
	Reference   string `json:"reference,omitempty"` // what the bank reports the customer quoted: txid, nosso número, free text
	CustomerID  string `json:"customerId,omitempty"`
	Payer       string `json:"payer,omitempty"` // the payer's name when the source gives it
}

// Validate checks a payment and normalizes it (the currency defaults to
// BRL). The problem names the field (its JSON name), never its value.
func (p *PaymentRecord) Validate() *FieldError {
	for _, f := range [][2]string{{"source", p.Source}, {"sourceRef", p.SourceRef}} {
		if msg := value.TextProblem(f[1]); msg != "" {
			return &FieldError{Field: f[0], Code: CodeInvalidText, Message: msg}
		}
	}
	if e := optionalTexts([2]string{"reference", p.Reference}, [2]string{"payer", p.Payer}); e != nil {
		return e
	}
	if e := checkMoney(p.AmountCents, &p.Currency); e != nil {
		return e
	}
	if e := checkDate("paidOn", p.PaidOn); e != nil {
		return e
	}
	switch {
	case p.Method == "":
		return &FieldError{Field: "method", Code: CodeMissing, Message: fmt.Sprintf("is required (one of %v)", Methods)}
	case !slices.Contains(Methods, p.Method):
		return &FieldError{Field: "method", Code: CodeInvalidValue, Message: fmt.Sprintf("must be one of %v", Methods)}
	}
	if p.CustomerID != "" {
		if msg := idProblem(p.CustomerID); msg != "" {
			return &FieldError{Field: "customerId", Code: CodeInvalidText, Message: msg}
		}
	}
	return nil
}

// StoredPayment is a payment as the ledger holds it.
type StoredPayment struct {
	ID string
	PaymentRecord
	LeftCents   int64 // not allocated: credit, or unmatched when nothing is allocated
	Allocations []Allocation
	RecordedBy  Actor
	CreatedAt   time.Time
}

// Allocation is part of a payment that pays an invoice.
type Allocation struct {
	PaymentID, InvoiceID string
	AmountCents          int64
	Rule                 Rule // RuleReference, RuleAmount, RuleManual
	By                   Actor
	At                   time.Time
}

const paymentColumns = `id, source, source_ref, amount_cents, currency, paid_on, method, reference, customer_id, payer,
 left_cents, recorded_by, recorded_by_actor, created_at`

func scanPayment(row store.Row) (StoredPayment, error) {
	var p StoredPayment
	var method string
	var created int64
	err := row.Scan(&p.ID, &p.Source, &p.SourceRef, &p.AmountCents, &p.Currency, &p.PaidOn, &method, &p.Reference, &p.CustomerID, &p.Payer,
		&p.LeftCents, &p.RecordedBy.Subject, &p.RecordedBy.Actor, &created)
	p.Method, p.CreatedAt = Method(method), micros(created)
	return p, err
}

func paymentArgs(p StoredPayment) []any {
	return []any{p.ID, p.Source, p.SourceRef, p.AmountCents, p.Currency, p.PaidOn, string(p.Method), p.Reference, p.CustomerID, p.Payer,
		p.LeftCents, p.RecordedBy.Subject, p.RecordedBy.Actor, p.CreatedAt.UnixMicro()}
}

var paymentInsertColumns = []string{"id", "source", "source_ref", "amount_cents", "currency", "paid_on", "method", "reference",
	"customer_id", "payer", "left_cents", "recorded_by", "recorded_by_actor", "created_at"}

// invalid is the failure of a record that does not validate, for the
// callers of the store that did not validate it themselves.
func invalid(fe *FieldError) *failure.Error {
	return &failure.Error{Code: failure.InvalidArguments, Field: fe.Field, Message: fe.Message}
}

// RecordPayment stores p, or returns the stored one with created=false when
// (Source, SourceRef) is known with the same amount, currency and date
// (else CodePaymentConflict). Nothing is allocated (AutoMatch, Allocate).
func RecordPayment(ctx context.Context, tx store.Tx, p PaymentRecord, by Actor, now time.Time) (pay StoredPayment, created bool, err error) {
	got, err := recordPayments(ctx, tx, []PaymentRecord{p}, by, now)
	if err != nil {
		var ie *IndexError
		if errors.As(err, &ie) {
			return StoredPayment{}, false, ie.Err
		}
		return StoredPayment{}, false, err
	}
	return got[0].StoredPayment, got[0].created, nil
}

type recorded struct {
	StoredPayment
	created bool
}

// recordPayments is RecordPayment for many: one per record, in order. A
// record that repeats an earlier one of ps is a duplicate of it.
func recordPayments(ctx context.Context, tx store.Tx, ps []PaymentRecord, by Actor, now time.Time) ([]recorded, error) {
	if by.Subject == "" {
		return nil, errors.New("ledger: record payments: no subject")
	}
	type key struct{ source, ref string }
	out := make([]recorded, len(ps))
	first := make(map[key]int, len(ps))
	var fresh []StoredPayment
	at := micros(now.UnixMicro())
	for i, p := range ps {
		if fe := p.Validate(); fe != nil {
			return nil, &IndexError{Index: i, Err: invalid(fe)}
		}
		k := key{p.Source, p.SourceRef}
		if j, dup := first[k]; dup {
			if !samePayment(ps[j], p) {
				return nil, &IndexError{Index: i, Err: conflict()}
			}
			continue
		}
		first[k] = i
		sp := StoredPayment{ID: ident.New(PaymentPrefix), PaymentRecord: p, LeftCents: p.AmountCents, RecordedBy: by, CreatedAt: at}
		out[i] = recorded{StoredPayment: sp, created: true}
		fresh = append(fresh, sp)
	}
	inserted := make(map[string]bool, len(fresh))
	err := writeRows(ctx, tx, len(fresh), len(paymentInsertColumns),
		func(n int) string {
			return insertSQL(tx.Dialect(), "ledger_payment", paymentInsertColumns, n, "ON CONFLICT (source, source_ref) DO NOTHING RETURNING id")
		},
		func(i int) []any { return paymentArgs(fresh[i]) },
		func(r store.Rows) error {
			var id string
			err := r.Scan(&id)
			inserted[id] = true
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("ledger: record payments: %w", err)
	}
	var known []string
	for i := range out {
		if out[i].created && !inserted[out[i].ID] {
			known = append(known, out[i].SourceRef)
		}
	}
	stored := make(map[key]StoredPayment)
	if len(known) > 0 {
		err := scanRows(ctx, tx, `SELECT `+paymentColumns+` FROM ledger_payment WHERE `+store.InList(tx.Dialect(), "source_ref", "$1"),
			[]any{jsonList(sortedUnique(known))}, func(r store.Rows) error {
				p, err := scanPayment(r)
				stored[key{p.Source, p.SourceRef}] = p
				return err
			})
		if err != nil {
			return nil, fmt.Errorf("ledger: record payments: %w", err)
		}
	}
	for i, p := range ps {
		if out[i].ID == "" { // a repeat within ps
			out[i] = recorded{StoredPayment: out[first[key{p.Source, p.SourceRef}]].StoredPayment}
			continue
		}
		if inserted[out[i].ID] {
			continue
		}
		old, ok := stored[key{out[i].Source, out[i].SourceRef}]
		if !ok {
			return nil, errors.New("ledger: record payments: a payment neither inserted nor found")
		}
		if !samePayment(old.PaymentRecord, out[i].PaymentRecord) {
			return nil, &IndexError{Index: i, Err: conflict()}
		}
		out[i] = recorded{StoredPayment: old}
	}
	return out, nil
}

// samePayment reports whether two records of one (source, reference) are
// the same payment; validated records have their currency set.
func samePayment(a, b PaymentRecord) bool {
	cur := func(c string) string { return cmpOr(c, "BRL") }
	return a.AmountCents == b.AmountCents && cur(a.Currency) == cur(b.Currency) && a.PaidOn == b.PaidOn
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func conflict() *failure.Error {
	return &failure.Error{Code: CodePaymentConflict, Field: "sourceRef",
		Message: "a payment of this source and reference is recorded with another amount, currency or date; nothing was recorded"}
}

// GetPayment returns the payment id with its allocations, or
// ErrPaymentNotFound.
func GetPayment(ctx context.Context, q store.Querier, id string) (StoredPayment, error) {
	p, err := scanPayment(q.QueryRow(ctx, `SELECT `+paymentColumns+` FROM ledger_payment WHERE id = $1`, id))
	if errors.Is(err, store.ErrNoRows) {
		return StoredPayment{}, ErrPaymentNotFound
	}
	if err != nil {
		return StoredPayment{}, fmt.Errorf("ledger: get payment: %w", err)
	}
	ps := []StoredPayment{p}
	if err := withAllocations(ctx, q, ps); err != nil {
		return StoredPayment{}, err
	}
	return ps[0], nil
}

const allocationColumns = `payment_id, invoice_id, amount_cents, rule, allocated_by, allocated_by_actor, created_at`

var allocationInsertColumns = []string{"payment_id", "invoice_id", "amount_cents", "rule", "allocated_by", "allocated_by_actor", "created_at"}

func scanAllocation(row store.Row) (Allocation, error) {
	var a Allocation
	var rule string
	var at int64
	err := row.Scan(&a.PaymentID, &a.InvoiceID, &a.AmountCents, &rule, &a.By.Subject, &a.By.Actor, &at)
	a.Rule, a.At = Rule(rule), micros(at)
	return a, err
}

// withAllocations fills the allocations of ps.
func withAllocations(ctx context.Context, q store.Querier, ps []StoredPayment) error {
	if len(ps) == 0 {
		return nil
	}
	at := make(map[string]int, len(ps))
	ids := make([]string, len(ps))
	for i, p := range ps {
		at[p.ID], ids[i] = i, p.ID
	}
	err := scanRows(ctx, q, `SELECT `+allocationColumns+` FROM ledger_allocation WHERE `+store.InList(dialect(q), "payment_id", "$1")+
		` ORDER BY created_at, invoice_id`, []any{jsonList(ids)}, func(r store.Rows) error {
		a, err := scanAllocation(r)
		if err == nil {
			ps[at[a.PaymentID]].Allocations = append(ps[at[a.PaymentID]].Allocations, a)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: allocations: %w", err)
	}
	return nil
}

// Allocations returns the allocations of payments to the invoice, oldest
// first.
func Allocations(ctx context.Context, q store.Querier, invoiceID string) ([]Allocation, error) {
	var out []Allocation
	err := scanRows(ctx, q, `SELECT `+allocationColumns+` FROM ledger_allocation WHERE invoice_id = $1 ORDER BY created_at, payment_id`,
		[]any{invoiceID}, func(r store.Rows) error {
			a, err := scanAllocation(r)
			out = append(out, a)
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("ledger: allocations: %w", err)
	}
	return out, nil
}

// lockPayment reads the payment id locked for update, with its allocations.
func lockPayment(ctx context.Context, tx store.Tx, id string) (StoredPayment, error) {
	p, err := scanPayment(tx.QueryRow(ctx, `SELECT `+paymentColumns+` FROM ledger_payment WHERE id = $1`+forUpdate(tx.Dialect(), ""), id))
	if errors.Is(err, store.ErrNoRows) {
		return StoredPayment{}, paymentNotFound(id)
	}
	if err != nil {
		return StoredPayment{}, err
	}
	ps := []StoredPayment{p}
	err = withAllocations(ctx, tx, ps)
	return ps[0], err
}

// paymentNotFound is the failure of a payment id the ledger does not have.
func paymentNotFound(id string) *failure.Error {
	return &failure.Error{Code: CodePaymentNotFound, Field: "paymentId", Message: "the ledger has no payment " + id, Err: ErrPaymentNotFound}
}

// ledgerChange is allocations about to be written, and the payments and
// invoices whose caches they change.
type ledgerChange struct {
	allocs   []Allocation
	payments map[string]*StoredPayment
	invoices map[string]*StoredInvoice
}

// allocate adds an allocation of amount of p to inv (checked already) to c.
func (c *ledgerChange) allocate(p *StoredPayment, inv *StoredInvoice, amount int64, rule Rule, by Actor, at time.Time) Allocation {
	a := Allocation{PaymentID: p.ID, InvoiceID: inv.InvoiceID, AmountCents: amount, Rule: rule, By: by, At: at}
	p.LeftCents -= amount
	p.Allocations = append(p.Allocations, a)
	inv.PaidCents += amount
	inv.derive()
	c.allocs = append(c.allocs, a)
	c.payments[p.ID] = p
	c.invoices[inv.InvoiceID] = inv
	return a
}

var leftColumns = []column{{"id", "text"}, {"left_cents", "bigint"}}

// write writes c: the allocations, then the payments' and invoices' caches.
func (c *ledgerChange) write(ctx context.Context, tx store.Tx, now time.Time) error {
	if len(c.allocs) == 0 {
		return nil
	}
	err := writeRows(ctx, tx, len(c.allocs), len(allocationInsertColumns),
		func(n int) string {
			return insertSQL(tx.Dialect(), "ledger_allocation", allocationInsertColumns, n, "")
		},
		func(i int) []any {
			a := c.allocs[i]
			return []any{a.PaymentID, a.InvoiceID, a.AmountCents, string(a.Rule), a.By.Subject, a.By.Actor, a.At.UnixMicro()}
		}, nil)
	if err != nil {
		return err
	}
	pays := make([]*StoredPayment, 0, len(c.payments))
	for _, p := range c.payments {
		pays = append(pays, p)
	}
	// Rows already locked, written in id order all the same.
	slices.SortFunc(pays, func(a, b *StoredPayment) int { return strings.Compare(a.ID, b.ID) })
	err = writeRows(ctx, tx, len(pays), len(leftColumns),
		func(n int) string { return updateSQL(tx.Dialect(), "ledger_payment", leftColumns, n) },
		func(i int) []any { return []any{pays[i].ID, pays[i].LeftCents} }, nil)
	if err != nil {
		return err
	}
	invs := make([]StoredInvoice, 0, len(c.invoices))
	for _, inv := range c.invoices {
		invs = append(invs, *inv)
	}
	slices.SortFunc(invs, func(a, b StoredInvoice) int { return strings.Compare(a.InvoiceID, b.InvoiceID) })
	return saveCache(ctx, tx, invs, now)
}

// Allocate is a person's or an agent's match of the payment to invoices:
// each planned amount, in order, checked by CheckAllocation against what
// the payment has left and the invoice has open (CodeAllocationRefused
// naming the invoice), all or nothing. A payment allocates to an invoice
// once; an invoice the ledger does not know is CodeInvoiceNotFound.
func Allocate(ctx context.Context, tx store.Tx, paymentID string, plan []Planned, by Actor, now time.Time) ([]Allocation, error) {
	if by.Subject == "" {
		return nil, errors.New("ledger: allocate: no subject")
	}
	if len(plan) == 0 {
		return nil, &failure.Error{Code: failure.InvalidArguments, Field: "allocations", Message: "must name at least one invoice"}
	}
	p, err := lockPayment(ctx, tx, paymentID)
	if err != nil {
		return nil, fmt.Errorf("ledger: allocate: %w", err)
	}
	ids := make([]string, len(plan))
	for i, pl := range plan {
		ids[i] = pl.InvoiceID
	}
	invs, err := lockInvoices(ctx, tx, ids)
	if err != nil {
		return nil, fmt.Errorf("ledger: allocate: %w", err)
	}
	c := ledgerChange{payments: map[string]*StoredPayment{}, invoices: map[string]*StoredInvoice{}}
	at := micros(now.UnixMicro())
	var out []Allocation
	for _, pl := range plan {
		inv, ok := invs[pl.InvoiceID]
		if !ok {
			return nil, notFound(pl.InvoiceID)
		}
		if slices.ContainsFunc(p.Allocations, func(a Allocation) bool { return a.InvoiceID == pl.InvoiceID }) {
			return nil, refused(pl.InvoiceID, errors.New("the payment is already allocated to it"))
		}
		if err := CheckAllocation(pl.AmountCents, p.LeftCents, p.Currency, inv.Currency, inv.Standing); err != nil {
			return nil, refused(pl.InvoiceID, err)
		}
		out = append(out, c.allocate(&p, &inv, pl.AmountCents, RuleManual, by, at))
		invs[pl.InvoiceID] = inv
	}
	if err := c.write(ctx, tx, now); err != nil {
		return nil, fmt.Errorf("ledger: allocate: %w", err)
	}
	return out, nil
}

func refused(invoiceID string, why error) *failure.Error {
	return &failure.Error{Code: CodeAllocationRefused, Field: "invoiceId",
		Message: fmt.Sprintf("invoice %s: %v; nothing was allocated", invoiceID, why), Err: why}
}

// AutoMatch allocates what the payment has left by Match over the open
// invoices of its currency that carry its reference (their own, or one
// recorded by AddReference), else of its customer,
// locking the payment, then the invoices (in id order). RuleNone allocates
// nothing.
func AutoMatch(ctx context.Context, tx store.Tx, paymentID string, by Actor, now time.Time) (Rule, []Allocation, error) {
	p, err := lockPayment(ctx, tx, paymentID)
	if err != nil {
		return RuleNone, nil, fmt.Errorf("ledger: auto match: %w", err)
	}
	rules, c, err := matchAll(ctx, tx, []*StoredPayment{&p}, by, now)
	if err != nil {
		return RuleNone, nil, fmt.Errorf("ledger: auto match: %w", err)
	}
	if err := c.write(ctx, tx, now); err != nil {
		return RuleNone, nil, fmt.Errorf("ledger: auto match: %w", err)
	}
	return rules[0], c.allocs, nil
}

// matchAll matches the payments (locked by the caller), in order, each
// against the candidates as the ones before left them, and returns each
// one's rule and the change to write.
func matchAll(ctx context.Context, tx store.Tx, ps []*StoredPayment, by Actor, now time.Time) ([]Rule, ledgerChange, error) {
	c := ledgerChange{payments: map[string]*StoredPayment{}, invoices: map[string]*StoredInvoice{}}
	var refs, custs []string
	for _, p := range ps {
		if p.LeftCents <= 0 {
			continue
		}
		if p.Reference != "" {
			refs = append(refs, p.Reference)
		}
		if p.CustomerID != "" {
			custs = append(custs, p.CustomerID)
		}
	}
	rules := make([]Rule, len(ps))
	for i := range rules {
		rules[i] = RuleNone
	}
	if len(refs) == 0 && len(custs) == 0 {
		return rules, c, nil
	}
	pool, err := readCandidates(ctx, tx, refs, custs, true)
	if err != nil {
		return nil, c, err
	}
	at := micros(now.UnixMicro())
	for i, p := range ps {
		cands, byID := pool.of(p, pool.byRef[p.Reference], pool.byCust[p.CustomerID])
		rule, plan := Match(p.matching(), cands)
		rules[i] = rule
		for _, pl := range plan {
			inv := byID[pl.InvoiceID]
			if err := CheckAllocation(pl.AmountCents, p.LeftCents, p.Currency, inv.Currency, inv.Standing); err != nil {
				return nil, c, fmt.Errorf("match of payment %s to invoice %s: %w", p.ID, inv.InvoiceID, err)
			}
			c.allocate(p, inv, pl.AmountCents, rule, by, at)
		}
	}
	return rules, c, nil
}

// candidatePool is what matching reads of the candidates of some
// payments: the invoices not settled that carry one of their references
// or belong to one of their customers, and the references of each.
type candidatePool struct {
	refsOf map[*StoredInvoice][]string
	byRef  map[string][]*StoredInvoice
	byCust map[string][]*StoredInvoice
}

// readCandidates reads the candidates of the payments quoting refs or
// naming custs (candidateSQL, locked in id order when lock), then the
// references recorded on them that the payments quote.
func readCandidates(ctx context.Context, q store.Querier, refs, custs []string, lock bool) (candidatePool, error) {
	d := dialect(q)
	refList := jsonList(sortedUnique(refs))
	return readPool(ctx, q, candidateSQL(d, lock), []any{refList, jsonList(sortedUnique(custs))}, refList)
}

// readCustomerPages reads the first limit candidates of each of custs, in
// id order (customerPagesSQL): the references they carry are their own.
func readCustomerPages(ctx context.Context, q store.Querier, custs []string, limit int) (candidatePool, error) {
	return readPool(ctx, q, customerPagesSQL(dialect(q)), []any{jsonList(sortedUnique(custs)), limit}, "")
}

// readPool reads the invoices sql selects (plainInvoiceColumns) into a
// pool, with the references of the JSON list refList recorded on them
// ("": none read).
func readPool(ctx context.Context, q store.Querier, sql string, args []any, refList string) (candidatePool, error) {
	pool := candidatePool{refsOf: map[*StoredInvoice][]string{}, byRef: map[string][]*StoredInvoice{}, byCust: map[string][]*StoredInvoice{}}
	d := dialect(q)
	var invs []*StoredInvoice
	err := scanRows(ctx, q, sql, args, func(r store.Rows) error {
		inv, err := scanPlainInvoice(r)
		invs = append(invs, &inv)
		return err
	})
	if err != nil {
		return pool, err
	}
	recorded := map[string][]string{}
	if refList != "" && refList != "[]" && len(invs) > 0 {
		err := scanRows(ctx, q, recordedSQL(d), []any{refList}, func(r store.Rows) error {
			var id, ref string
			err := r.Scan(&id, &ref)
			recorded[id] = append(recorded[id], ref)
			return err
		})
		if err != nil {
			return pool, err
		}
	}
	for _, inv := range invs {
		pool.refsOf[inv] = references(*inv, recorded[inv.InvoiceID]...)
		for _, ref := range pool.refsOf[inv] {
			pool.byRef[ref] = append(pool.byRef[ref], inv)
		}
		pool.byCust[inv.CustomerID] = append(pool.byCust[inv.CustomerID], inv)
	}
	return pool, nil
}

// of is p's candidates in the pool's lists (of its reference first, then
// of its customer), each once: not settled, and not already paid by p.
// byID finds each one's invoice.
func (pool candidatePool) of(p *StoredPayment, lists ...[]*StoredInvoice) (cands []Candidate, byID map[string]*StoredInvoice) {
	seen := map[*StoredInvoice]bool{}
	byID = map[string]*StoredInvoice{}
	for _, list := range lists {
		for _, inv := range list {
			if seen[inv] {
				continue
			}
			seen[inv] = true
			if inv.State.Settled() || slices.ContainsFunc(p.Allocations, func(a Allocation) bool { return a.InvoiceID == inv.InvoiceID }) {
				continue
			}
			byID[inv.InvoiceID] = inv
			cands = append(cands, Candidate{InvoiceID: inv.InvoiceID, CustomerID: inv.CustomerID, Currency: inv.Currency,
				DueDate: inv.DueDate, OpenCents: inv.OpenCents, References: pool.refsOf[inv]})
		}
	}
	return cands, byID
}

// matching is what Match reads of p.
func (p *StoredPayment) matching() Payment {
	return Payment{AmountCents: p.AmountCents, Currency: p.Currency, PaidOn: p.PaidOn, Reference: p.Reference,
		CustomerID: p.CustomerID, LeftCents: p.LeftCents}
}

// candidateSQL reads, in id order, the invoices not settled that carry
// one of the references of the JSON list $1 (their own, or recorded by
// AddReference) or belong to one of the customers of $2, locked when lock.
// Each reference column's index answers its part, ledger_reference's the
// recorded ones, and the primary key the ids they find (anyOf).
func candidateSQL(d store.Dialect, lock bool) string {
	in := func(col string) string {
		return `SELECT id FROM ledger_invoice WHERE ` + col + ` <> '' AND ` + anyOf(d, col, "$1")
	}
	ids := in("pix_txid") + ` UNION ` + in("our_number") + ` UNION ` + in("boleto_line") + ` UNION ` + in("reference") +
		` UNION SELECT invoice_id FROM ledger_reference WHERE ` + anyOf(d, "reference", "$1") +
		` UNION SELECT id FROM ledger_invoice WHERE state IN ('open', 'partially_paid') AND ` + anyOf(d, "customer_id", "$2")
	found := `id IN (` + ids + `)`
	if d == store.Postgres {
		found = `id = ANY (ARRAY(` + ids + `))`
	}
	sql := `SELECT ` + plainInvoiceColumns + ` FROM ledger_invoice WHERE state IN ('open', 'partially_paid') AND ` + found + ` ORDER BY id`
	if lock {
		sql += forUpdate(d, "")
	}
	return sql
}

// customerPagesSQL reads, for each customer of the JSON list $1, its
// first $2 invoices not settled in id order: a range of
// ledger_invoice_unsettled per customer, however many invoices each has.
func customerPagesSQL(d store.Dialect) string {
	page := `SELECT id FROM ledger_invoice WHERE state IN ('open', 'partially_paid') AND customer_id = c.value ORDER BY id LIMIT $2`
	if d == store.Postgres {
		return `SELECT i.* FROM jsonb_array_elements_text($1::jsonb) c(value)
 CROSS JOIN LATERAL (SELECT ` + plainInvoiceColumns + ` FROM ledger_invoice WHERE state IN ('open', 'partially_paid') AND customer_id = c.value
 ORDER BY id LIMIT $2) i`
	}
	return `SELECT ` + prefixed("i.", plainInvoiceColumns) + ` FROM json_each($1) c JOIN ledger_invoice i ON i.id IN (` + page + `)`
}

// prefixed is the comma-separated columns cols, each qualified with p.
func prefixed(p, cols string) string {
	out := strings.Split(cols, ",")
	for i, c := range out {
		out[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(out, ", ")
}

// anyOf is store.InList, but on PostgreSQL an array's = ANY, which its
// planner takes for a few values, where it takes the rows of
// jsonb_array_elements_text for 100 (the default of a function's rows)
// and, 100 for every list of a statement, prefers reading whole tables
// of tens of thousands of invoices to as many index lookups. A list is
// what one import's payments quote: a few, or thousands looked up in an
// index.
func anyOf(d store.Dialect, column, placeholder string) string {
	if d == store.Postgres {
		return column + " = ANY (ARRAY(SELECT jsonb_array_elements_text(" + placeholder + "::jsonb)))"
	}
	return store.InList(d, column, placeholder)
}

// references are the payment references an invoice's customer was given:
// the invoice's own, then recorded ones (AddReference), each once.
func references(inv StoredInvoice, recorded ...string) []string {
	var out []string
	for _, r := range append([]string{inv.PixTxID, inv.OurNumber, inv.BoletoLine, inv.Reference}, recorded...) {
		if r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// ImportCounts is what ImportPayments did: the payments read, new and
// already known (nothing changed), the new ones matched by each rule or
// unmatched, what was allocated, and what matched payments left as credit.
type ImportCounts struct {
	Read, New, Duplicate, MatchedReference, MatchedAmount, Unmatched int
	AllocatedCents, CreditCents                                      int64
}

// ImportPayments records and auto-matches each payment of a file in tx,
// all or nothing (a refused record is an *IndexError), in the file's order:
// a payment already known is a duplicate and changes nothing.
func ImportPayments(ctx context.Context, tx store.Tx, ps []PaymentRecord, by Actor, now time.Time) (ImportCounts, error) {
	counts := ImportCounts{Read: len(ps)}
	got, err := recordPayments(ctx, tx, ps, by, now)
	if err != nil {
		return ImportCounts{}, err
	}
	var fresh []*StoredPayment
	for i := range got {
		if got[i].created {
			fresh = append(fresh, &got[i].StoredPayment)
		}
	}
	counts.New = len(fresh)
	counts.Duplicate = len(ps) - len(fresh)
	rules, c, err := matchAll(ctx, tx, fresh, by, now)
	if err != nil {
		return ImportCounts{}, fmt.Errorf("ledger: import payments: %w", err)
	}
	if err := c.write(ctx, tx, now); err != nil {
		return ImportCounts{}, fmt.Errorf("ledger: import payments: %w", err)
	}
	for i, p := range fresh {
		switch rules[i] {
		case RuleReference:
			counts.MatchedReference++
		case RuleAmount:
			counts.MatchedAmount++
		default:
			counts.Unmatched++
			continue
		}
		counts.AllocatedCents += p.AmountCents - p.LeftCents
		counts.CreditCents += p.LeftCents
	}
	return counts, nil
}

// cursor is a keyset page's position, opaque to callers.
func encodeCursor(parts ...string) string {
	b, _ := json.Marshal(parts)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string, n int) ([]string, *failure.Error) {
	bad := &failure.Error{Code: failure.InvalidArguments, Field: "after", Message: "is not a cursor this list returned"}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var parts []string
	if json.Unmarshal(b, &parts) != nil || len(parts) != n {
		return nil, bad
	}
	return parts, nil
}

// MaxPage bounds a page of the lists.
const MaxPage = 500

func checkLimit(limit int) *failure.Error {
	if limit < 1 || limit > MaxPage {
		return &failure.Error{Code: failure.InvalidArguments, Field: "limit", Message: "must be from 1 to " + strconv.Itoa(MaxPage)}
	}
	return nil
}

// unmatchedSQL is ListUnmatched's query: ledger_payment_left, from after.
func unmatchedSQL(after string, limit int) (string, []any, *failure.Error) {
	sql := `SELECT ` + paymentColumns + ` FROM ledger_payment WHERE left_cents > 0`
	args := []any{limit + 1}
	if after != "" {
		parts, fe := decodeCursor(after, 2)
		if fe != nil {
			return "", nil, fe
		}
		at, err := strconv.ParseInt(parts[0], 10, 64)
		if err != nil {
			return "", nil, &failure.Error{Code: failure.InvalidArguments, Field: "after", Message: "is not a cursor this list returned"}
		}
		sql += ` AND (created_at, id) > ($2, $3)`
		args = append(args, at, parts[1])
	}
	return sql + ` ORDER BY created_at, id LIMIT $1`, args, nil
}

// ListUnmatched returns a page of the payments with something left
// (unmatched, or credit), oldest first, with their allocations, and the
// cursor of the next page ("" at the end).
func ListUnmatched(ctx context.Context, q store.Querier, after string, limit int) (page []StoredPayment, next string, err error) {
	if fe := checkLimit(limit); fe != nil {
		return nil, "", fe
	}
	sql, args, fe := unmatchedSQL(after, limit)
	if fe != nil {
		return nil, "", fe
	}
	err = scanRows(ctx, q, sql, args, func(r store.Rows) error {
		p, err := scanPayment(r)
		page = append(page, p)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("ledger: list unmatched: %w", err)
	}
	if len(page) > limit {
		page = page[:limit]
		last := page[limit-1]
		next = PaymentCursor(last)
	}
	if err := withAllocations(ctx, q, page); err != nil {
		return nil, "", err
	}
	return page, next, nil
}

// PaymentCursor is the cursor of ListUnmatched's page that ends at p: the
// next page starts after it.
func PaymentCursor(p StoredPayment) string {
	return encodeCursor(strconv.FormatInt(p.CreatedAt.UnixMicro(), 10), p.ID)
}
