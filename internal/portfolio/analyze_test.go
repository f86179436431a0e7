package portfolio

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/value"
)

// inv builds an invoice whose customer name is derived from its customer id.
func inv(id, cust, due string, cents int64, st Status, dnc bool) Invoice {
	return Invoice{ID: id, CustomerID: cust, CustomerName: "Name " + cust, DueDate: due,
		AmountCents: cents, Status: st, DoNotContact: dnc}
}

// named is x with another customer name.
func named(x Invoice, name string) Invoice {
	x.CustomerName = name
	return x
}

// acct builds the expected account, reason included.
func acct(cust, oldest string, days int, cents int64) Account {
	p, a := PriorityMedium, ActionPrepareReminder
	if days >= 14 || cents >= 200_000 {
		p, a = PriorityHigh, ActionHumanReview
	}
	return Account{CustomerID: cust, CustomerName: "Name " + cust, AmountCents: cents,
		OldestDueDate: oldest, DaysOverdue: days, Priority: p, RecommendedAction: a,
		Reason: fmt.Sprintf("%d days overdue with %s open", days, value.FormatBRL(cents))}
}

func TestAnalyze(t *testing.T) {
	const asOf = "2025-06-30"
	tests := []struct {
		name string
		invs []Invoice
		want Analysis
	}{
		{
			name: "blocked customer is absent everywhere",
			invs: []Invoice{
				inv("1", "a", "2025-06-01", 5_000, StatusOpen, false),
				inv("2", "a", "2025-07-10", 7_000, StatusOpen, false),
				inv("3", "a", "2025-01-01", 1_000, StatusPaid, true), // a paid invoice blocks too
				inv("4", "b", "2025-06-20", 1_000, StatusOpen, false),
			},
			want: Analysis{TotalOpenCents: 1_000, Accounts: []Account{acct("b", "2025-06-20", 10, 1_000)}},
		},
		{
			name: "paid and void are ignored",
			invs: []Invoice{
				inv("1", "a", "2025-06-25", 100, StatusOpen, false),
				inv("2", "a", "2025-01-01", 900_000, StatusPaid, false),
				inv("3", "a", "2025-02-01", 800_000, StatusVoid, false),
			},
			want: Analysis{TotalOpenCents: 100, Accounts: []Account{acct("a", "2025-06-25", 5, 100)}},
		},
		{
			name: "customer with nothing overdue is counted but not listed",
			invs: []Invoice{
				inv("1", "a", asOf, 300, StatusOpen, false), // due today is not overdue
				inv("2", "a", "2025-07-01", 400, StatusOpen, false),
				inv("3", "b", "2025-06-29", 50, StatusOpen, false),
				inv("4", "b", "2025-08-01", 70, StatusOpen, false), // not overdue, still in b's amount
			},
			want: Analysis{TotalOpenCents: 820, Accounts: []Account{acct("b", "2025-06-29", 1, 120)}},
		},
		{
			name: "only paid invoices",
			invs: []Invoice{inv("1", "a", "2025-01-01", 100, StatusPaid, false)},
			want: Analysis{TotalOpenCents: 0, Accounts: []Account{}},
		},
		{
			name: "priority thresholds",
			invs: []Invoice{
				inv("1", "d13", "2025-06-17", 199_999, StatusOpen, false),
				inv("2", "d14", "2025-06-16", 1, StatusOpen, false),
				inv("3", "c200k", "2025-06-29", 200_000, StatusOpen, false),
				inv("4", "c199k", "2025-06-29", 199_999, StatusOpen, false),
			},
			want: Analysis{TotalOpenCents: 599_999, Accounts: []Account{
				acct("d14", "2025-06-16", 14, 1),
				acct("d13", "2025-06-17", 13, 199_999),
				acct("c200k", "2025-06-29", 1, 200_000),
				acct("c199k", "2025-06-29", 1, 199_999),
			}},
		},
		{
			name: "order: days desc, amount desc, customerId asc",
			invs: []Invoice{
				inv("1", "c", "2025-06-20", 500, StatusOpen, false),
				inv("2", "a", "2025-06-20", 500, StatusOpen, false),
				inv("3", "b", "2025-06-20", 500, StatusOpen, false),
				inv("4", "z", "2025-06-20", 900, StatusOpen, false),
				inv("5", "y", "2025-06-01", 1, StatusOpen, false),
			},
			want: Analysis{TotalOpenCents: 2_401, Accounts: []Account{
				acct("y", "2025-06-01", 29, 1),
				acct("z", "2025-06-20", 10, 900),
				acct("a", "2025-06-20", 10, 500),
				acct("b", "2025-06-20", 10, 500),
				acct("c", "2025-06-20", 10, 500),
			}},
		},
		{
			name: "oldest overdue date and the sum of all open",
			invs: []Invoice{
				inv("1", "a", "2025-06-10", 100, StatusOpen, false),
				inv("2", "a", "2025-05-31", 200, StatusOpen, false),
				inv("3", "a", "2025-06-20", 300, StatusOpen, false),
				inv("4", "a", "2025-09-01", 400, StatusOpen, false),
				inv("5", "a", "2025-01-01", 500, StatusPaid, false),
			},
			want: Analysis{TotalOpenCents: 1_000, Accounts: []Account{acct("a", "2025-05-31", 30, 1_000)}},
		},
		{
			name: "name variants: the first open invoice's name, and a warning",
			invs: []Invoice{
				named(inv("1", "a", "2025-06-01", 100, StatusPaid, false), "ACME LTDA"), // not open: not the name
				named(inv("2", "a", "2025-06-10", 200, StatusOpen, false), "Name a"),
				named(inv("3", "b", "2025-06-10", 300, StatusOpen, false), "Name b"),
				named(inv("4", "a", "2025-06-20", 400, StatusOpen, false), "Name  a"),
				named(inv("5", "a", "2025-06-20", 500, StatusVoid, false), "Name a"), // a name seen before
				named(inv("6", "c", "2025-06-20", 600, StatusOpen, false), "Name c"),
				named(inv("7", "c", "2025-06-20", 700, StatusOpen, false), "name c"),
			},
			want: Analysis{TotalOpenCents: 2_200,
				Accounts: []Account{acct("a", "2025-06-10", 20, 600), acct("b", "2025-06-10", 20, 300), acct("c", "2025-06-20", 10, 1_300)},
				Warnings: []Warning{{Code: WarningNameVariants, CustomerID: "a", NameCount: 3}, {Code: WarningNameVariants, CustomerID: "c", NameCount: 2}},
			},
		},
		{
			name: "name variants of a blocked customer are left out with it",
			invs: []Invoice{
				named(inv("1", "a", "2025-06-01", 100, StatusOpen, false), "Name a"),
				named(inv("2", "a", "2025-06-01", 100, StatusOpen, true), "Renamed a"),
				inv("3", "b", "2025-06-29", 50, StatusOpen, false),
			},
			want: Analysis{TotalOpenCents: 50, Accounts: []Account{acct("b", "2025-06-29", 1, 50)}, Warnings: []Warning{}},
		},
		{
			name: "name variants of a customer with nothing open or overdue",
			invs: []Invoice{
				named(inv("1", "a", "2025-06-01", 100, StatusPaid, false), "Name a"),
				named(inv("2", "a", "2025-07-01", 100, StatusOpen, false), "Other a"),
			},
			want: Analysis{TotalOpenCents: 100, Accounts: []Account{}, Warnings: []Warning{{Code: WarningNameVariants, CustomerID: "a", NameCount: 2}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &Input{AsOf: asOf, Invoices: tt.invs}
			if err := Validate(in); err != nil {
				t.Fatalf("Validate(%s) = %v, want nil", tt.name, err)
			}
			if tt.want.Warnings == nil {
				tt.want.Warnings = []Warning{}
			}
			got := referenceView(Analyze(in))
			if diff := gocmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Analyze(%s) mismatch (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestAnalyzeEncodesNoAccountsAsEmptyArray(t *testing.T) {
	in := &Input{AsOf: "2025-06-30", Invoices: []Invoice{inv("1", "a", "2025-07-01", 1, StatusOpen, false)}}
	b, err := json.Marshal(Analyze(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"totalOpenCents":1,"accounts":[],"warnings":[],"summary":{"baseCurrency":"BRL","accountsByPriority":{"high":0,"medium":0},` +
		`"priorityThresholds":{"daysOverdue":14,"openAmountCents":200000},"aging":[{"bucket":"current","amountCents":1,"invoiceCount":1},{"bucket":"1-30","amountCents":0,"invoiceCount":0},` +
		`{"bucket":"31-60","amountCents":0,"invoiceCount":0},{"bucket":"61-90","amountCents":0,"invoiceCount":0},{"bucket":"90+","amountCents":0,"invoiceCount":0}],` +
		`"leftOut":{"doNotContact":{"invoices":0,"customers":0},"paid":{"invoices":0,"customers":0},"void":{"invoices":0,"customers":0},` +
		`"disputed":{"invoices":0,"customers":0},"promisePending":{"invoices":0,"customers":0}},"rates":[]}}`
	if got := string(b); got != want {
		t.Errorf("json.Marshal(Analyze(x)) = %s, want %s", got, want)
	}
}

func TestAnalyzeDaysOverdue(t *testing.T) {
	tests := []struct {
		due, asOf string
		want      int
	}{
		{"2024-02-28", "2024-02-29", 1},
		{"2024-02-28", "2024-03-01", 2}, // leap year
		{"2023-02-28", "2023-03-01", 1},
		{"2024-02-29", "2024-03-01", 1},
		{"2024-02-29", "2025-02-28", 365},
		{"2024-02-29", "2025-03-01", 366},
		{"2023-12-31", "2024-01-01", 1},
		{"2024-01-31", "2024-02-01", 1},
		{"2024-04-30", "2024-05-01", 1},
		{"2000-02-28", "2000-03-01", 2}, // 2000 is a leap year
		{"2099-02-28", "2099-03-01", 1},
		{"2000-01-01", "2099-12-31", 36524},
		{"2025-06-29", "2025-06-30", 1},
	}
	for _, tt := range tests {
		t.Run(tt.due+"_"+tt.asOf, func(t *testing.T) {
			in := &Input{AsOf: tt.asOf, Invoices: []Invoice{inv("1", "a", tt.due, 1, StatusOpen, false)}}
			got := Analyze(in)
			if len(got.Accounts) != 1 || got.Accounts[0].DaysOverdue != tt.want {
				t.Errorf("Analyze(due %s, asOf %s).Accounts = %+v, want one with DaysOverdue %d", tt.due, tt.asOf, got.Accounts, tt.want)
			}
		})
	}
}

func TestDayNumber(t *testing.T) {
	// Every day of the valid range, against the time package.
	d := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	epoch := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	for ; d.Year() < 2100; d = d.AddDate(0, 0, 1) {
		s := d.Format(time.DateOnly)
		want := int(d.Sub(epoch).Hours() / 24)
		if got := dayNumber(s); got != want {
			t.Fatalf("dayNumber(%q) = %d, want %d", s, got, want)
		}
	}
}

// refAnalyze is the reference analyzePortfolio ported literally and
// naively: maps, time.Date, fmt, and the reference's sort (no customerId
// tie-break).
func refAnalyze(in *Input) Analysis {
	blocked := map[string]bool{}
	for _, x := range in.Invoices {
		if x.DoNotContact {
			blocked[x.CustomerID] = true
		}
	}
	var open []Invoice
	for _, x := range in.Invoices {
		if x.Status == "open" && !blocked[x.CustomerID] {
			open = append(open, x)
		}
	}
	byCustomer := map[string][]Invoice{}
	var order []string // a JS Map iterates in insertion order
	for _, x := range open {
		if _, ok := byCustomer[x.CustomerID]; !ok {
			order = append(order, x.CustomerID)
		}
		byCustomer[x.CustomerID] = append(byCustomer[x.CustomerID], x)
	}
	accounts := []Account{}
	for _, id := range order {
		invs := byCustomer[id]
		var overdue []Invoice
		for _, x := range invs {
			if x.DueDate < in.AsOf {
				overdue = append(overdue, x)
			}
		}
		if len(overdue) == 0 {
			continue
		}
		var amount int64
		for _, x := range invs {
			amount += x.AmountCents
		}
		oldest := overdue[0].DueDate
		for _, x := range overdue {
			if x.DueDate < oldest {
				oldest = x.DueDate
			}
		}
		days := refDaysBetween(oldest, in.AsOf)
		priority, action := "medium", "prepare_reminder"
		if days >= 14 || amount >= 200_000 {
			priority, action = "high", "human_review"
		}
		accounts = append(accounts, Account{
			CustomerID: id, CustomerName: invs[0].CustomerName, AmountCents: amount,
			OldestDueDate: oldest, DaysOverdue: days,
			Priority: Priority(priority), RecommendedAction: Action(action),
			Reason: fmt.Sprintf("%d days overdue with %s open", days, refFormatBRL(amount)),
		})
	}
	slices.SortStableFunc(accounts, func(l, r Account) int {
		if d := r.DaysOverdue - l.DaysOverdue; d != 0 {
			return d
		}
		return int(r.AmountCents - l.AmountCents)
	})
	var total int64
	for _, x := range open {
		total += x.AmountCents
	}
	return Analysis{TotalOpenCents: total, Accounts: accounts}
}

func refDaysBetween(from, to string) int {
	var fy, fm, fd, ty, tm, td int
	fmt.Sscanf(from, "%d-%d-%d", &fy, &fm, &fd)
	fmt.Sscanf(to, "%d-%d-%d", &ty, &tm, &td)
	f := time.Date(fy, time.Month(fm), fd, 0, 0, 0, 0, time.UTC)
	t := time.Date(ty, time.Month(tm), td, 0, 0, 0, 0, time.UTC)
	return int(t.Sub(f).Round(24*time.Hour) / (24 * time.Hour))
}

func refFormatBRL(cents int64) string {
	whole := fmt.Sprint(cents / 100)
	var groups []string
	for len(whole) > 3 {
		groups = append([]string{whole[len(whole)-3:]}, groups...)
		whole = whole[:len(whole)-3]
	}
	groups = append([]string{whole}, groups...)
	return fmt.Sprintf("R$\u00a0%s,%02d", strings.Join(groups, "."), cents%100)
}

// randomInput makes a valid portfolio that exercises the edges: amounts at
// the thresholds, due dates at asOf, ties, blocked customers.
func randomInput(r *rand.Rand) *Input {
	asOf := time.Date(2000+r.IntN(100), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
	if r.IntN(4) == 0 {
		asOf = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC) // just after a leap day
	}
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)
	nCust := 1 + r.IntN(12)
	n := 1 + r.IntN(40)
	in := &Input{AsOf: asOf.Format(time.DateOnly), Invoices: make([]Invoice, n)}
	for i := range in.Invoices {
		c := r.IntN(nCust)
		var span int
		switch r.IntN(4) {
		case 0:
			span = r.IntN(3) - 1 // around asOf
		case 1:
			span = r.IntN(31) - 15 // around the 14-day threshold
		case 2:
			span = r.IntN(2001) - 1000
		default:
			span = r.IntN(61) - 30
		}
		due := asOf.AddDate(0, 0, span)
		if due.Before(lo) {
			due = lo
		}
		if due.After(hi) {
			due = hi
		}
		amounts := []int64{1, 100, 199_999, 200_000, 50_000, 100_000, value.MaxAmountCents}
		amount := amounts[r.IntN(len(amounts))]
		if r.IntN(2) == 0 {
			amount = 1 + r.Int64N(300_000)
		}
		st := []Status{StatusOpen, StatusOpen, StatusOpen, StatusPaid, StatusVoid}[r.IntN(5)]
		// Some customers come under variants of their name, as in ERP
		// exports: case, spacing, a new legal name.
		name := fmt.Sprintf("Cliente %d Ltda", c)
		if c%3 == 0 {
			name = []string{name, name, strings.ToUpper(name), strings.Replace(name, " ", "  ", 1), fmt.Sprintf("Cliente %d S.A.", c)}[r.IntN(5)]
		}
		in.Invoices[i] = Invoice{
			ID:           fmt.Sprintf("inv-%d", i),
			CustomerID:   fmt.Sprintf("c%02d", c),
			CustomerName: name,
			DueDate:      due.Format(time.DateOnly),
			AmountCents:  amount,
			Status:       st,
			DoNotContact: r.IntN(30) == 0,
		}
	}
	return in
}

// withTieBreak sorts like Analyze. The reference's sort is stable, so it only
// reorders what the reference leaves tied.
func withTieBreak(a Analysis) Analysis {
	slices.SortStableFunc(a.Accounts, func(l, r Account) int {
		if c := cmp.Compare(r.DaysOverdue, l.DaysOverdue); c != 0 {
			return c
		}
		if c := cmp.Compare(r.AmountCents, l.AmountCents); c != 0 {
			return c
		}
		return cmp.Compare(l.CustomerID, r.CustomerID)
	})
	return a
}

// refWarnings restates the warnings naively: every customer, in order of
// first appearance, that is not blocked and has more than one distinct name.
func refWarnings(in *Input) []Warning {
	blocked := map[string]bool{}
	names := map[string]map[string]bool{}
	var order []string
	for _, x := range in.Invoices {
		if x.DoNotContact {
			blocked[x.CustomerID] = true
		}
		if names[x.CustomerID] == nil {
			names[x.CustomerID] = map[string]bool{}
			order = append(order, x.CustomerID)
		}
		names[x.CustomerID][x.CustomerName] = true
	}
	warnings := []Warning{}
	for _, id := range order {
		if n := len(names[id]); n > 1 && !blocked[id] {
			warnings = append(warnings, Warning{Code: WarningNameVariants, CustomerID: id, NameCount: n})
		}
	}
	return warnings
}

// refResult is what Analyze must return: the reference's analysis, ties
// broken, with the warnings the reference does not have.
func refResult(in *Input) Analysis {
	a := withTieBreak(refAnalyze(in))
	a.Warnings = refWarnings(in)
	return a
}

func TestAnalyzeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(2025, 6))
	n := 5000
	if testing.Short() {
		n = 500 // the first 500 of the same seeded cases
	}
	for i := range n {
		in := randomInput(r)
		if err := Validate(in); err != nil {
			t.Fatalf("randomInput #%d is invalid: %v", i, err)
		}
		want := refResult(in)
		got := referenceView(Analyze(in))
		if diff := gocmp.Diff(want, got); diff != "" {
			b, _ := json.Marshal(in)
			t.Fatalf("Analyze(%s) mismatch (-want +got):\n%s", b, diff)
		}
	}
	// And the benchmark portfolio.
	in, _ := benchInput(t)
	if diff := gocmp.Diff(refResult(in), referenceView(Analyze(in))); diff != "" {
		t.Errorf("Analyze(benchInput) mismatch (-want +got):\n%s", diff)
	}
}

// TestAnalyzeOrder covers both ways Analyze orders accounts: a counting
// sort by days with the runs of equal days sorted (days spanning few
// values), and a merge sort of all (days spread wide); and runs long
// enough to be merged, with ties on days and amount left to the id.
func TestAnalyzeOrder(t *testing.T) {
	tests := []struct {
		name      string
		customers int
		days      func(r *rand.Rand, c int) int
		cents     func(r *rand.Rand, c int) int64
	}{
		{"one day, one amount", 200, func(*rand.Rand, int) int { return 3 }, func(*rand.Rand, int) int64 { return 500 }},
		{"one day, few amounts", 120, func(*rand.Rand, int) int { return 20 }, func(r *rand.Rand, _ int) int64 { return int64(1 + r.IntN(3)) }},
		{"few days", 300, func(r *rand.Rand, _ int) int { return 1 + r.IntN(4) }, func(r *rand.Rand, _ int) int64 { return int64(1 + r.IntN(50)) }},
		{"days spread wide", 300, func(r *rand.Rand, _ int) int { return 1 + r.IntN(9000) }, func(r *rand.Rand, _ int) int64 { return int64(1 + r.IntN(3)) }},
		{"two far days", 40, func(r *rand.Rand, c int) int { return []int{1, 9000}[c%2] }, func(r *rand.Rand, _ int) int64 { return int64(1 + r.IntN(2)) }},
		{"descending days", 60, func(_ *rand.Rand, c int) int { return 1 + c }, func(*rand.Rand, int) int64 { return 1 }},
	}
	asOf := time.Date(2050, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(8, 9))
			in := &Input{AsOf: asOf.Format(time.DateOnly)}
			for i := range MaxInvoices {
				c := r.IntN(tt.customers)
				if i < tt.customers {
					c = i // every customer appears
				}
				st := StatusOpen
				if r.IntN(5) == 0 {
					st = StatusPaid
				}
				in.Invoices = append(in.Invoices, Invoice{
					ID: fmt.Sprintf("i%d", i), CustomerID: fmt.Sprintf("c%03d", (c*7919)%1000), CustomerName: fmt.Sprintf("n%d", c),
					DueDate:     asOf.AddDate(0, 0, -tt.days(r, c)).Format(time.DateOnly),
					AmountCents: tt.cents(r, c), Status: st, DoNotContact: r.IntN(100) == 0,
				})
			}
			if err := Validate(in); err != nil {
				t.Fatalf("Validate(%s) = %v", tt.name, err)
			}
			if diff := gocmp.Diff(refResult(in), referenceView(Analyze(in))); diff != "" {
				t.Errorf("Analyze(%s) mismatch with reference (-want +got):\n%s", tt.name, diff)
			}
		})
	}
}

func TestFormatBRLMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(10, 11))
	var amounts []int64
	for p := int64(1); p <= math.MaxInt64/10; p *= 10 {
		amounts = append(amounts, p-1, p, p+1, 10*p-1)
	}
	for range 20000 {
		amounts = append(amounts, r.Int64N(1<<r.IntN(63)+1))
	}
	amounts = append(amounts, math.MaxInt64)
	for _, c := range amounts {
		if got, want := value.FormatBRL(c), refFormatBRL(c); got != want {
			t.Fatalf("FormatBRL(%d) = %q, want %q", c, got, want)
		}
	}
}

// reasonLen sizes the reasons' shared string: a wrong size would only cost
// a copy, so it is checked here.
func TestReasonLen(t *testing.T) {
	for _, days := range []int32{math.MinInt32, -100000, -10, -9, -1, 0, 1, 9, 10, 99, 100, 36524, math.MaxInt32} {
		for _, cents := range []int64{math.MinInt64, -1, 0, 1, 99, 100, 99_999, 100_000, 199_999_999, MaxInvoices * value.MaxAmountCents, math.MaxInt64} {
			reason := fmt.Sprintf("%d days overdue with %s open", days, value.FormatBRL(cents))
			if got := reasonLen(days, cents, brl); got != len(reason) {
				t.Errorf("reasonLen(%d, %d) = %d, want len(%q) = %d", days, cents, got, reason, len(reason))
			}
		}
	}
}
