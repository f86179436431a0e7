package portfolio

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestAnalyzeExtendedMatchesNaive holds AnalyzeWith to naiveAnalyze, the
// rules restated, over random extended portfolios of every size, with and
// without pacing.
func TestAnalyzeExtendedMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 15))
	pacings := []time.Duration{0, 0, time.Nanosecond, 36 * time.Hour, 3 * 24 * time.Hour, 30 * 24 * time.Hour}
	n := 1500
	if testing.Short() {
		n = 200 // the first 200 of the same seeded cases
	}
	for i := range n {
		asOf := time.Date(2001+r.IntN(98), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		in := genExtended(1+r.IntN(60), uint64(i), asOf)
		if err := Validate(in); err != nil {
			b, _ := json.Marshal(in)
			t.Fatalf("genExtended #%d is invalid: %v\n%s", i, err, b)
		}
		o := Options{ContactPacing: pacings[r.IntN(len(pacings))]}
		want, got := naiveAnalyze(in, o), AnalyzeWith(in, o)
		if diff := gocmp.Diff(want, got); diff != "" {
			b, _ := json.Marshal(in)
			t.Fatalf("AnalyzeWith(%s, %v) mismatch (-want +got):\n%s", b, o.ContactPacing, diff)
		}
	}
}

// TestSummaryTotals: over random extended portfolios, the aging buckets sum
// to TotalOpenCents, the accounts by priority to the accounts, and every
// account's conversions to no more than its amount.
func TestSummaryTotals(t *testing.T) {
	r := rand.New(rand.NewPCG(16, 23))
	n := 2000
	if testing.Short() {
		n = 200 // the first 200 of the same seeded cases
	}
	for i := range n {
		in := genExtended(1+r.IntN(MaxInvoices), uint64(1_000_000+i), time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(400)))
		a := AnalyzeWith(in, Options{ContactPacing: 72 * time.Hour})
		var sum int64
		var count int
		for _, b := range a.Summary.Aging {
			sum += b.AmountCents
			count += b.InvoiceCount
		}
		if sum != a.TotalOpenCents {
			t.Fatalf("seed %d: Σ aging = %d, TotalOpenCents = %d", 1_000_000+i, sum, a.TotalOpenCents)
		}
		open := 0
		for _, x := range in.Invoices {
			if x.Status == StatusOpen {
				open++
			}
		}
		// Each open invoice is in the aging once, or left out for
		// doNotContact.
		blockedOpen := 0
		blocked := map[string]bool{}
		for _, x := range in.Invoices {
			blocked[x.CustomerID] = blocked[x.CustomerID] || x.DoNotContact
		}
		for _, x := range in.Invoices {
			if x.Status == StatusOpen && blocked[x.CustomerID] {
				blockedOpen++
			}
		}
		if count+blockedOpen != open {
			t.Fatalf("seed %d: Σ aging invoices = %d, want %d open less %d blocked", 1_000_000+i, count, open, blockedOpen)
		}
		if by := a.Summary.AccountsByPriority; by.High+by.Medium != len(a.Accounts) {
			t.Fatalf("seed %d: accountsByPriority %+v, %d accounts", 1_000_000+i, by, len(a.Accounts))
		}
		for _, acct := range a.Accounts {
			var conv int64
			for _, c := range detailsOf(&acct).Conversions {
				conv += c.ConvertedCents
			}
			// High exactly when some factor set it; never nil.
			if conv > acct.AmountCents || acct.PriorityFactors == nil || (acct.Priority == PriorityHigh) != (len(acct.PriorityFactors) > 0) {
				t.Fatalf("seed %d: account %+v", 1_000_000+i, acct)
			}
		}
	}
}

// TestAppendJSONMatchesMarshalExtended: AppendJSON writes encoding/json's
// bytes for analyses of random extended portfolios.
func TestAppendJSONMatchesMarshalExtended(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 4))
	for i := range 300 {
		in := genExtended(1+r.IntN(120), uint64(2_000_000+i), time.Date(2030, 1, 1+r.IntN(300), 0, 0, 0, 0, time.UTC))
		a := AnalyzeWith(in, Options{ContactPacing: time.Duration(r.IntN(5)) * 24 * time.Hour})
		want, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON = %s\nencoding/json = %s", got, want)
		}
	}
}

// TestParseMatchesStdlibExtended: Parse reads extended documents as
// encoding/json does, compact and indented.
func TestParseMatchesStdlibExtended(t *testing.T) {
	r := rand.New(rand.NewPCG(18, 5))
	n := 500
	if testing.Short() {
		n = 100 // the first 100 of the same seeded cases
	}
	for i := range n {
		in := genExtended(1+r.IntN(80), uint64(3_000_000+i), time.Date(2030, 1, 1+r.IntN(300), 0, 0, 0, 0, time.UTC))
		var data []byte
		var err error
		if i%2 == 0 {
			data, err = json.Marshal(in)
		} else {
			data, err = json.MarshalIndent(in, "", "  ")
		}
		if err != nil {
			t.Fatal(err)
		}
		var want Input
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if err := Validate(&want); err != nil {
			t.Fatalf("Validate(encoding/json's %s) = %v", data, err)
		}
		got, err := Parse(data)
		if err != nil {
			t.Fatalf("Parse(%s) = %v, want nil error", data, err)
		}
		if diff := gocmp.Diff(&want, got); diff != "" {
			t.Fatalf("Parse(%s) mismatch with encoding/json (-want +got):\n%s", data, diff)
		}
	}
}
