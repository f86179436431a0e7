package web

import (
	"net/url"
	"slices"
	"testing"

	"github.com/cobranca/cobranca/internal/ledger"
)

// FuzzParseLedgerFilter: any query is read or refused naming one of the page's parameters,
// and what is read keeps to what ledger.ListInvoices accepts (the cursor it checks itself).
func FuzzParseLedgerFilter(f *testing.F) {
	for _, s := range []string{"", "customer=cust-a&state=open&state=paid&overdue=3&disputed=no&promise=1",
		"state=closed", "overdue=-1", "overdue=1e3", "disputed=maybe", "promise=yes", "customer=%00", "overdue=99999999999999999999"} {
		f.Add(s)
	}
	fields := []string{"customer", "state", "overdue", "disputed", "promise"}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lf, form, fe := parseLedgerFilter(q, "2026-12-02")
		if fe != nil {
			if !slices.Contains(fields, fe.Field) || fe.Message == "" {
				t.Fatalf("%q: refused naming %q (%s), want one of %v", raw, fe.Field, fe.Message, fields)
			}
			return
		}
		if lf.MinDaysOverdue < 0 || lf.Limit < 1 || lf.Limit > ledger.MaxPage || len(lf.CustomerID) > 200 || lf.After != q.Get("after") {
			t.Fatalf("%q: read as %+v, which the ledger refuses", raw, lf)
		}
		for _, s := range lf.States {
			if !slices.Contains(ledger.States, s) {
				t.Fatalf("%q: read the state %q", raw, s)
			}
		}
		if form.Customer != lf.CustomerID || len(form.States) != len(lf.States) || form.Promise != lf.PromisePending {
			t.Fatalf("%q: the form %+v is not the filter %+v", raw, form, lf)
		}
	})
}
