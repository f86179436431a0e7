package portfolio

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestReleaseReuse: Parse takes its invoice array from what Release gave
// back; an Input parsed into a reused array reads exactly as one parsed
// into a fresh one (no invoice, detail or string of an earlier call shows
// through: extended portfolios, with details, alternate with reference-shaped
// ones and with smaller ones), and the analysis made before Release is
// untouched by it and by the Parses after.
func TestReleaseReuse(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 28))
	reused := 0
	var kept []Analysis
	var keptJSON [][]byte
	for i := range 300 {
		asOf := time.Date(2010+r.IntN(80), time.Month(1+r.IntN(12)), 1+r.IntN(28), 0, 0, 0, 0, time.UTC)
		var src *Input
		if i%2 == 0 {
			src = genExtended(1+r.IntN(120), uint64(i), asOf)
		} else {
			src = randomInput(r)
		}
		doc, err := json.Marshal(src)
		if err != nil {
			t.Fatal(err)
		}
		var want Input // encoding/json's reading: no pool
		if err := json.Unmarshal(doc, &want); err != nil {
			t.Fatal(err)
		}
		pooled, _ := invoicePool.Get().(*[]Invoice)
		var room *Invoice
		if pooled != nil {
			room = &(*pooled)[:1][0]
			invoicePool.Put(pooled)
		}
		got, err := Parse(doc)
		if err != nil {
			t.Fatalf("#%d: Parse: %v", i, err)
		}
		if room != nil && len(got.Invoices) > 0 && &got.Invoices[0] == room {
			reused++
		}
		if diff := gocmp.Diff(&want, got); diff != "" {
			t.Fatalf("#%d: Parse into a reused array differs from encoding/json (-want +got):\n%s", i, diff)
		}
		a := Analyze(got)
		kept = append(kept, a)
		keptJSON = append(keptJSON, a.AppendJSON(nil))
		n := len(got.Invoices)
		xs := got.Invoices
		got.Release()
		if got.Invoices != nil {
			t.Fatalf("#%d: Invoices after Release = %d, want nil", i, len(got.Invoices))
		}
		for j := range n {
			if xs[j] != (Invoice{}) {
				t.Fatalf("#%d: invoice %d not zeroed by Release: %+v", i, j, xs[j])
			}
		}
	}
	for i := range kept {
		if got := kept[i].AppendJSON(nil); string(got) != string(keptJSON[i]) {
			t.Fatalf("analysis #%d changed after its input was released and others parsed:\n%s\nwant\n%s", i, got, keptJSON[i])
		}
	}
	if reused < 100 {
		t.Errorf("%d of 300 Parses reused a released array, want most: the pool is not used", reused)
	}
}

// TestReleaseShortened: an Input whose Invoices were shortened (or built by
// hand) goes back to the pool zeroed to its capacity: the next Parse of more
// invoices, without optional fields, gets none of the invoices past the
// released length.
func TestReleaseShortened(t *testing.T) {
	asOf := time.Date(2025, 6, 30, 0, 0, 0, 0, time.UTC)
	src := genExtended(40, 9, asOf)
	for i := range src.Invoices {
		src.Invoices[i].Details().Disputed = true
	}
	doc, err := json.Marshal(src)
	if err != nil {
		t.Fatal(err)
	}
	plain := `{"asOf":"2025-06-30","invoices":[`
	for i := range 40 {
		if i > 0 {
			plain += ","
		}
		plain += `{"id":"p` + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","customerId":"c","customerName":"n","dueDate":"2025-06-01","amountCents":1,"status":"open","doNotContact":false}`
	}
	plain += `]}`
	for range 50 {
		in, err := Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		in.Invoices = in.Invoices[:1]
		in.Release()
		got, err := Parse([]byte(plain))
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range got.Invoices {
			if x.InvoiceDetails != nil {
				t.Fatalf("invoice %d of a plain portfolio has details %+v: a released array's invoices showed through", i, *x.InvoiceDetails)
			}
		}
		got.Release()
	}
}
