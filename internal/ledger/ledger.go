// Package ledger holds the rules of the receivables ledger: what state an
// invoice is in and how much of it is open, derived from its payments'
// allocations and its write-off (never typed in); which allocations are
// allowed; and how a payment that comes back from a bank is matched to the
// invoices it pays.
//
// The rules are pure: the store reads the records, these functions decide.
// Amounts are int64 minor units of the invoice's currency.
package ledger

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"
)

// State is an invoice's state, derived from its records.
type State string

const (
	StateOpen          State = "open"           // nothing paid or written off
	StatePartiallyPaid State = "partially_paid" // some paid, some still open
	StatePaid          State = "paid"           // payments cover the amount
	StateVoid          State = "void"           // the operator cancelled it
	StateWrittenOff    State = "written_off"    // a write-off closed what payments left open
)

// States lists every state, in the order people read them.
var States = []State{StateOpen, StatePartiallyPaid, StatePaid, StateVoid, StateWrittenOff}

// Settled reports whether nothing more is to be collected in this state.
func (s State) Settled() bool { return s == StatePaid || s == StateVoid || s == StateWrittenOff }

// Invoice is what the ledger derives from: the invoice's amount, whether
// the operator voided it, and the sums of what was allocated to it and
// written off.
type Invoice struct {
	AmountCents     int64
	Void            bool
	AllocatedCents  int64 // the sum of the payments' allocations to it
	WrittenOffCents int64 // its write-off's amount, 0 without one
}

// Standing is an invoice's derived state and open amount.
type Standing struct {
	State     State `json:"state"`
	OpenCents int64 `json:"openAmountCents"`
	PaidCents int64 `json:"paidAmountCents"`
}

// Derive is an invoice's standing. A void invoice is void whatever was
// paid (a payment allocated to it should be moved, and is still shown as
// paid); payments that cover the amount make it paid; a write-off closes
// what payments left, partly or wholly; otherwise it is open or partially
// paid with what remains.
func Derive(inv Invoice) Standing {
	paid := min(inv.AllocatedCents, inv.AmountCents)
	st := Standing{PaidCents: inv.AllocatedCents}
	switch {
	case inv.Void:
		st.State = StateVoid
	case paid >= inv.AmountCents:
		st.State = StatePaid
	default:
		st.OpenCents = max(inv.AmountCents-paid-inv.WrittenOffCents, 0)
		switch {
		case st.OpenCents == 0:
			st.State = StateWrittenOff
		case paid > 0:
			st.State = StatePartiallyPaid
		default:
			st.State = StateOpen
		}
	}
	return st
}

// Method is how a payment was made.
type Method string

const (
	MethodPIX      Method = "pix"
	MethodBoleto   Method = "boleto"
	MethodTransfer Method = "transfer"
	MethodCard     Method = "card"
	MethodOther    Method = "other"
)

// Methods lists every method.
var Methods = []Method{MethodPIX, MethodBoleto, MethodTransfer, MethodCard, MethodOther}

// Allocation rules. An allocation moves part of a payment to an invoice of
// the same currency; it may not exceed what the payment has left nor what
// the invoice has open. What a payment has left after its allocations is
// the customer's credit.
var (
	ErrCurrency    = errors.New("the payment and the invoice are in different currencies")
	ErrSettled     = errors.New("the invoice is settled")
	ErrOverInvoice = errors.New("the allocation is more than the invoice has open")
	ErrOverPayment = errors.New("the allocation is more than the payment has left")
	ErrNotPositive = errors.New("the allocation must be more than zero")
)

// CheckAllocation reports whether amount of a payment with left unallocated
// may go to an invoice in standing st.
func CheckAllocation(amount, left int64, paymentCurrency, invoiceCurrency string, st Standing) error {
	switch {
	case amount <= 0:
		return ErrNotPositive
	case paymentCurrency != invoiceCurrency:
		return ErrCurrency
	case st.State.Settled():
		return ErrSettled
	case amount > st.OpenCents:
		return ErrOverInvoice
	case amount > left:
		return ErrOverPayment
	}
	return nil
}

// Candidate is an open invoice a payment might pay.
type Candidate struct {
	InvoiceID  string
	CustomerID string
	Currency   string
	DueDate    string // YYYY-MM-DD
	OpenCents  int64
	References []string // the payment references the customer was given: PIX txid, nosso número, boleto line, free reference, the txids of reminders' PIX codes
}

// Payment is what matching reads of a payment.
type Payment struct {
	AmountCents int64
	Currency    string
	PaidOn      string // YYYY-MM-DD
	Reference   string // the reference the bank reports (txid, nosso número…), empty if none
	CustomerID  string // when the source names the customer, else empty
	LeftCents   int64  // what is still unallocated
}

// Rule says which rule matched a payment.
type Rule string

const (
	RuleReference Rule = "reference" // the payment carries an invoice's payment reference
	RuleAmount    Rule = "amount"    // exact open amount, same customer, due date in the window
	RuleNone      Rule = "unmatched" // nothing matched, or more than one invoice could be meant
)

// Window is how far from an invoice's due date a payment of its exact open
// amount is taken to pay it: from 60 days before to 120 days after.
var Window = struct{ Before, After int }{Before: 60, After: 120}

// Planned is one allocation matching proposes.
type Planned struct {
	InvoiceID   string
	AmountCents int64
}

// Match decides what a payment pays among candidates (open invoices of its
// currency). First, the invoices that carry its reference, oldest due date
// first, each up to its open amount while the payment lasts (a PIX code
// for a reminder of several invoices carries one txid); what is left is
// credit. Failing that, the one invoice of the payment's customer whose
// open amount equals the payment and whose due date is within Window of
// the payment's date; two or more such invoices are ambiguous, and the
// payment stays unmatched for a person to decide.
func Match(p Payment, candidates []Candidate) (Rule, []Planned) {
	if p.LeftCents <= 0 {
		return RuleNone, nil
	}
	var refd []Candidate
	for _, c := range candidates {
		if carriesReference(p, c) {
			refd = append(refd, c)
		}
	}
	if len(refd) > 0 {
		slices.SortStableFunc(refd, func(a, b Candidate) int {
			return cmp.Or(cmp.Compare(a.DueDate, b.DueDate), cmp.Compare(a.InvoiceID, b.InvoiceID))
		})
		left := p.LeftCents
		var plan []Planned
		for _, c := range refd {
			if left == 0 {
				break
			}
			n := min(left, c.OpenCents)
			plan = append(plan, Planned{InvoiceID: c.InvoiceID, AmountCents: n})
			left -= n
		}
		return RuleReference, plan
	}
	var found *Candidate
	for i, c := range candidates {
		if !fitsAmount(p, c) {
			continue
		}
		if found != nil {
			return RuleNone, nil // ambiguous: a person decides
		}
		found = &candidates[i]
	}
	if found == nil {
		return RuleNone, nil
	}
	return RuleAmount, []Planned{{InvoiceID: found.InvoiceID, AmountCents: found.OpenCents}}
}

// Fit is the rule of Match that c alone satisfies for p: RuleReference
// when it carries p's reference, RuleAmount when its open amount, customer
// and due date fit p, else RuleNone. Match takes the reference's
// invoices, or the one amount fit; a person choosing among candidates
// (Suggest) sees each one's fit by the same tests.
func Fit(p Payment, c Candidate) Rule {
	switch {
	case p.LeftCents <= 0:
		return RuleNone
	case carriesReference(p, c):
		return RuleReference
	case fitsAmount(p, c):
		return RuleAmount
	}
	return RuleNone
}

// carriesReference reports whether c is an open invoice of p's currency
// that carries p's reference.
func carriesReference(p Payment, c Candidate) bool {
	return p.Reference != "" && c.Currency == p.Currency && c.OpenCents > 0 && slices.Contains(c.References, p.Reference)
}

// fitsAmount reports whether c is an invoice of p's customer and currency
// whose open amount is what p has left and whose due date is within
// Window of p's date.
func fitsAmount(p Payment, c Candidate) bool {
	if p.CustomerID == "" || p.PaidOn == "" || c.CustomerID != p.CustomerID || c.Currency != p.Currency || c.OpenCents != p.LeftCents {
		return false
	}
	paid, err := time.Parse(time.DateOnly, p.PaidOn)
	if err != nil {
		return false
	}
	due, err := time.Parse(time.DateOnly, c.DueDate)
	if err != nil {
		return false
	}
	return !paid.Before(due.AddDate(0, 0, -Window.Before)) && !paid.After(due.AddDate(0, 0, Window.After))
}

// DisputeReason is why a customer disputes an invoice, from a fixed list.
type DisputeReason string

const (
	DisputeWrongAmount DisputeReason = "wrong_amount"
	DisputeNotReceived DisputeReason = "not_received"
	DisputeDamaged     DisputeReason = "damaged_or_defective"
	DisputeDuplicate   DisputeReason = "duplicate"
	DisputeAlreadyPaid DisputeReason = "already_paid"
	DisputeCancelled   DisputeReason = "cancelled"
	DisputePricing     DisputeReason = "pricing"
	DisputeOtherReason DisputeReason = "other"
)

// DisputeReasons lists every reason.
var DisputeReasons = []DisputeReason{DisputeWrongAmount, DisputeNotReceived, DisputeDamaged, DisputeDuplicate,
	DisputeAlreadyPaid, DisputeCancelled, DisputePricing, DisputeOtherReason}

// ParseDisputeReason reads a reason from the list.
func ParseDisputeReason(s string) (DisputeReason, error) {
	if slices.Contains(DisputeReasons, DisputeReason(s)) {
		return DisputeReason(s), nil
	}
	return "", fmt.Errorf("not a dispute reason (one of %v)", DisputeReasons)
}
