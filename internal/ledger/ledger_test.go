package ledger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDerive(t *testing.T) {
	cases := []struct {
		name string
		inv  Invoice
		want Standing
	}{
		{"nothing paid", Invoice{AmountCents: 1000}, Standing{StateOpen, 1000, 0}},
		{"partly paid", Invoice{AmountCents: 1000, AllocatedCents: 400}, Standing{StatePartiallyPaid, 600, 400}},
		{"paid exactly", Invoice{AmountCents: 1000, AllocatedCents: 1000}, Standing{StatePaid, 0, 1000}},
		{"void", Invoice{AmountCents: 1000, Void: true}, Standing{StateVoid, 0, 0}},
		{"void after a payment shows it", Invoice{AmountCents: 1000, Void: true, AllocatedCents: 300}, Standing{StateVoid, 0, 300}},
		{"written off whole", Invoice{AmountCents: 1000, WrittenOffCents: 1000}, Standing{StateWrittenOff, 0, 0}},
		{"written off the rest", Invoice{AmountCents: 1000, AllocatedCents: 700, WrittenOffCents: 300}, Standing{StateWrittenOff, 0, 700}},
		{"a partial write-off leaves the rest open", Invoice{AmountCents: 1000, WrittenOffCents: 200}, Standing{StateOpen, 800, 0}},
		{"partial write-off and payment", Invoice{AmountCents: 1000, AllocatedCents: 100, WrittenOffCents: 200}, Standing{StatePartiallyPaid, 700, 100}},
		{"paid before a write-off: paid", Invoice{AmountCents: 1000, AllocatedCents: 1000, WrittenOffCents: 50}, Standing{StatePaid, 0, 1000}},
	}
	for _, c := range cases {
		if got := Derive(c.inv); got != c.want {
			t.Errorf("%s: Derive(%+v) = %+v, want %+v", c.name, c.inv, got, c.want)
		}
	}
}

func TestCheckAllocation(t *testing.T) {
	open := Standing{State: StatePartiallyPaid, OpenCents: 500}
	cases := []struct {
		amount, left int64
		pc, ic       string
		st           Standing
		want         error
	}{
		{500, 500, "BRL", "BRL", open, nil},
		{1, 1000, "BRL", "BRL", open, nil},
		{0, 1000, "BRL", "BRL", open, ErrNotPositive},
		{-5, 1000, "BRL", "BRL", open, ErrNotPositive},
		{100, 1000, "USD", "BRL", open, ErrCurrency},
		{100, 1000, "BRL", "BRL", Standing{State: StatePaid}, ErrSettled},
		{100, 1000, "BRL", "BRL", Standing{State: StateVoid}, ErrSettled},
		{100, 1000, "BRL", "BRL", Standing{State: StateWrittenOff}, ErrSettled},
		{501, 1000, "BRL", "BRL", open, ErrOverInvoice},
		{400, 300, "BRL", "BRL", open, ErrOverPayment},
	}
	for _, c := range cases {
		if got := CheckAllocation(c.amount, c.left, c.pc, c.ic, c.st); !errors.Is(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("CheckAllocation(%d, %d, %s, %s, %+v) = %v, want %v", c.amount, c.left, c.pc, c.ic, c.st, got, c.want)
		}
	}
}

func TestMatch(t *testing.T) {
	cands := []Candidate{
		{InvoiceID: "a", CustomerID: "c1", Currency: "BRL", DueDate: "2026-11-10", OpenCents: 1000, References: []string{"TX1", "NN-1"}},
		{InvoiceID: "b", CustomerID: "c1", Currency: "BRL", DueDate: "2026-11-01", OpenCents: 500, References: []string{"TX1"}},
		{InvoiceID: "c", CustomerID: "c2", Currency: "BRL", DueDate: "2026-11-20", OpenCents: 700},
		{InvoiceID: "d", CustomerID: "c3", Currency: "BRL", DueDate: "2026-11-20", OpenCents: 900},
		{InvoiceID: "e", CustomerID: "c3", Currency: "BRL", DueDate: "2026-12-20", OpenCents: 900},
		{InvoiceID: "f", CustomerID: "c4", Currency: "USD", DueDate: "2026-11-20", OpenCents: 300},
	}
	cases := []struct {
		name string
		p    Payment
		rule Rule
		plan []Planned
	}{
		{"reference of one invoice", Payment{AmountCents: 1000, LeftCents: 1000, Currency: "BRL", Reference: "NN-1"},
			RuleReference, []Planned{{"a", 1000}}},
		{"a txid over two invoices: oldest due first", Payment{AmountCents: 1500, LeftCents: 1500, Currency: "BRL", Reference: "TX1"},
			RuleReference, []Planned{{"b", 500}, {"a", 1000}}},
		{"short: the oldest first, the rest stays open", Payment{AmountCents: 700, LeftCents: 700, Currency: "BRL", Reference: "TX1"},
			RuleReference, []Planned{{"b", 500}, {"a", 200}}},
		{"over: the excess is credit", Payment{AmountCents: 2000, LeftCents: 2000, Currency: "BRL", Reference: "TX1"},
			RuleReference, []Planned{{"b", 500}, {"a", 1000}}},
		{"reference in another currency does not match", Payment{AmountCents: 1000, LeftCents: 1000, Currency: "USD", Reference: "NN-1"},
			RuleNone, nil},
		{"amount, customer and window", Payment{AmountCents: 700, LeftCents: 700, Currency: "BRL", CustomerID: "c2", PaidOn: "2026-11-25"},
			RuleAmount, []Planned{{"c", 700}}},
		{"an unknown reference falls back to amount", Payment{AmountCents: 700, LeftCents: 700, Currency: "BRL", Reference: "??", CustomerID: "c2", PaidOn: "2026-11-25"},
			RuleAmount, []Planned{{"c", 700}}},
		{"window's first day", Payment{LeftCents: 700, Currency: "BRL", CustomerID: "c2", PaidOn: "2026-09-21"}, RuleAmount, []Planned{{"c", 700}}},
		{"before the window", Payment{LeftCents: 700, Currency: "BRL", CustomerID: "c2", PaidOn: "2026-09-20"}, RuleNone, nil},
		{"window's last day", Payment{LeftCents: 700, Currency: "BRL", CustomerID: "c2", PaidOn: "2027-03-20"}, RuleAmount, []Planned{{"c", 700}}},
		{"after the window", Payment{LeftCents: 700, Currency: "BRL", CustomerID: "c2", PaidOn: "2027-03-21"}, RuleNone, nil},
		{"amount of another customer", Payment{LeftCents: 700, Currency: "BRL", CustomerID: "c1", PaidOn: "2026-11-25"}, RuleNone, nil},
		{"no customer named", Payment{LeftCents: 700, Currency: "BRL", PaidOn: "2026-11-25"}, RuleNone, nil},
		{"ambiguous: two invoices of that amount", Payment{LeftCents: 900, Currency: "BRL", CustomerID: "c3", PaidOn: "2026-11-25"}, RuleNone, nil},
		{"a cent off", Payment{LeftCents: 699, Currency: "BRL", CustomerID: "c2", PaidOn: "2026-11-25"}, RuleNone, nil},
		{"nothing left", Payment{LeftCents: 0, Currency: "BRL", Reference: "TX1"}, RuleNone, nil},
	}
	for _, c := range cases {
		rule, plan := Match(c.p, cands)
		if rule != c.rule || !cmp.Equal(plan, c.plan) {
			t.Errorf("%s: Match = %s %v, want %s %v", c.name, rule, plan, c.rule, c.plan)
		}
	}
}

// A random history of one invoice — payments allocated, a write-off,
// voiding — replayed event by event with a running balance, against
// Derive over the sums the store keeps.
func TestDeriveAgainstReplay(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 20000 {
		amount := r.Int64N(100000) + 1
		balance := amount // what is still to be collected, event by event
		var allocated, writtenOff int64
		void, wroteOff := false, false
		events := ""
		for range r.IntN(8) {
			inv := Invoice{AmountCents: amount, Void: void, AllocatedCents: allocated, WrittenOffCents: writtenOff}
			st := Derive(inv)
			switch r.IntN(6) {
			case 0, 1, 2: // a payment allocated, maybe more than is open
				n := r.Int64N(amount) + 1
				if err := CheckAllocation(n, n, "BRL", "BRL", st); err != nil {
					if !st.State.Settled() && n <= balance {
						t.Fatalf("history %d%s: allocation of %d refused (%v) with %d open", i, events, n, err, balance)
					}
					continue
				}
				if void || n > balance {
					t.Fatalf("history %d%s: allocation of %d allowed with %d open (void %v)", i, events, n, balance, void)
				}
				allocated += n
				balance -= n
				events += fmt.Sprintf(" pay %d", n)
			case 3: // the one write-off, of some or all of what is open
				if wroteOff || void || balance == 0 {
					continue
				}
				n := r.Int64N(balance) + 1
				if r.IntN(2) == 0 {
					n = balance
				}
				writtenOff, wroteOff = n, true
				balance -= n
				events += fmt.Sprintf(" writeoff %d", n)
			case 4:
				void = true
				events += " void"
			}
		}
		var want Standing
		want.PaidCents = allocated
		switch {
		case void:
			want.State = StateVoid
		case balance == 0 && allocated == amount:
			want.State = StatePaid
		case balance == 0:
			want.State = StateWrittenOff
		case allocated > 0:
			want.State, want.OpenCents = StatePartiallyPaid, balance
		default:
			want.State, want.OpenCents = StateOpen, balance
		}
		got := Derive(Invoice{AmountCents: amount, Void: void, AllocatedCents: allocated, WrittenOffCents: writtenOff})
		if got != want {
			t.Fatalf("history %d (amount %d:%s): Derive = %+v, replay = %+v", i, amount, events, got, want)
		}
	}
}

func TestParseDisputeReason(t *testing.T) {
	for _, r := range DisputeReasons {
		if got, err := ParseDisputeReason(string(r)); err != nil || got != r {
			t.Errorf("ParseDisputeReason(%q) = %q, %v", r, got, err)
		}
	}
	for _, s := range []string{"", "Other", "wrong amount", "other "} {
		if _, err := ParseDisputeReason(s); err == nil {
			t.Errorf("ParseDisputeReason(%q) accepted", s)
		}
	}
}
