package ledger_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

func addReference(db store.DB, ids []string, ref, source, draft string) error {
	_, err := inTx(db, func(ctx context.Context, tx store.Tx) (struct{}, error) {
		return struct{}{}, ledger.AddReference(ctx, tx, ids, ref, source, draft, t0)
	})
	return err
}

func importPayments(t *testing.T, db store.DB, ps ...ledger.PaymentRecord) ledger.ImportCounts {
	t.Helper()
	return must[ledger.ImportCounts](t)(inTx(db, func(ctx context.Context, tx store.Tx) (ledger.ImportCounts, error) {
		return ledger.ImportPayments(ctx, tx, ps, ana, t0)
	}))
}

// allocationsOf are the invoice's allocations as "payment source ref, rule, amount".
func allocationsOf(t *testing.T, db store.DB, invoiceID string) []string {
	t.Helper()
	var out []string
	for _, a := range must[[]ledger.Allocation](t)(ledger.Allocations(context.Background(), db, invoiceID)) {
		p := must[ledger.StoredPayment](t)(ledger.GetPayment(context.Background(), db, a.PaymentID))
		out = append(out, fmt.Sprintf("%s %s %d", p.SourceRef, a.Rule, a.AmountCents))
	}
	return out
}

// TestAddReferenceMatches: a reminder's txid recorded on two invoices of a
// customer (AddReference) makes a payment quoting it, imported from a
// bank file, pay both by the reference rule, the earlier due first; one
// of less pays the earlier whole and the later in part. The invoices' own
// references, the PIX txid from the operator's systems among them, stay
// as imported and still match. A reference recorded on a paid invoice
// pulls no payment onto it; ids the ledger does not know are ignored; a
// second record of the same reference (a second reminder with the same
// txid) changes nothing. On both stores, as the serving role.
func TestAddReferenceMatches(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		a := inv("NF-A", "C-1", 10000, "2026-12-20")
		a.PixTxID = "ERPTXA"
		b := inv("NF-B", "C-1", 2500, "2026-12-05")
		c := inv("NF-C", "C-2", 4000, "2026-12-01")
		d := inv("NF-D", "C-2", 6000, "2026-12-03")
		paid := inv("NF-P", "C-3", 700, "2026-11-01")
		must[ledger.UpsertCounts](t)(upsert(t, db, a, b, c, d, paid))
		p := record(t, db, ledger.PaymentRecord{Source: "test", SourceRef: "manual-p", AmountCents: 700, Currency: "BRL", PaidOn: "2026-11-02", Method: ledger.MethodPIX})
		must[[]ledger.Allocation](t)(allocate(db, p.ID, ledger.Planned{InvoiceID: "NF-P", AmountCents: 700}))

		if err := addReference(db, []string{"NF-B", "NF-A", "NF-UNKNOWN", "NF-A"}, "DRAFTTX1", ledger.SourceReminder, "d_one"); err != nil {
			t.Fatalf("AddReference = %v", err)
		}
		// A firm reminder of the same draft's invoices, with another code.
		if err := addReference(db, []string{"NF-A", "NF-B"}, "DRAFTTX2", ledger.SourceReminder, "d_two"); err != nil {
			t.Fatalf("AddReference = %v", err)
		}
		// The same txid again, from another draft: already recorded, kept as first recorded.
		if err := addReference(db, []string{"NF-A"}, "DRAFTTX1", ledger.SourceReminder, "d_three"); err != nil {
			t.Fatalf("AddReference again = %v", err)
		}
		if err := addReference(db, []string{"NF-C", "NF-D"}, "DRAFTTX3", ledger.SourceReminder, "d_four"); err != nil {
			t.Fatalf("AddReference = %v", err)
		}
		if err := addReference(db, []string{"NF-P"}, "PAIDTX", ledger.SourceReminder, "d_five"); err != nil {
			t.Fatalf("AddReference on a paid invoice = %v", err)
		}
		if err := addReference(db, nil, "NOTHING", ledger.SourceReminder, "d_six"); err != nil {
			t.Fatalf("AddReference of no invoices = %v", err)
		}
		if n := storetest.Count(t, db, "ledger_reference"); n != 7 {
			t.Errorf("ledger_reference holds %d rows, want 7 (unknown ids ignored, repeats not added)", n)
		}
		want := []ledger.RecordedReference{
			{InvoiceID: "NF-A", Reference: "DRAFTTX1", Source: "reminder", SourceID: "d_one", At: t0.Truncate(time.Microsecond)},
			{InvoiceID: "NF-A", Reference: "DRAFTTX2", Source: "reminder", SourceID: "d_two", At: t0.Truncate(time.Microsecond)},
		}
		if diff := cmp.Diff(want, must[[]ledger.RecordedReference](t)(ledger.RecordedReferences(ctx, db, "NF-A"))); diff != "" {
			t.Errorf("RecordedReferences(NF-A) (-want +got):\n%s", diff)
		}
		if got := get(t, db, "NF-A"); got.PixTxID != "ERPTXA" || got.Reference != "" {
			t.Errorf("NF-A's own references are now %q, %q; want ERPTXA and none", got.PixTxID, got.Reference)
		}
		// The operator's systems send NF-A again, unchanged: its recorded references stay.
		if got := must[ledger.UpsertCounts](t)(upsert(t, db, a)); got.Unchanged != 1 {
			t.Fatalf("upsert again = %+v", got)
		}

		got := importPayments(t, db,
			ledger.PaymentRecord{Source: "csv:extrato.csv", SourceRef: "L1", AmountCents: 12500, Currency: "BRL", PaidOn: "2026-12-02",
				Method: ledger.MethodPIX, Reference: "DRAFTTX1"},
			ledger.PaymentRecord{Source: "csv:extrato.csv", SourceRef: "L2", AmountCents: 5000, Currency: "BRL", PaidOn: "2026-12-02",
				Method: ledger.MethodPIX, Reference: "DRAFTTX3"},
			ledger.PaymentRecord{Source: "csv:extrato.csv", SourceRef: "L3", AmountCents: 700, Currency: "BRL", PaidOn: "2026-12-02",
				Method: ledger.MethodPIX, Reference: "PAIDTX"})
		if want := (ledger.ImportCounts{Read: 3, New: 3, MatchedReference: 2, Unmatched: 1, AllocatedCents: 17500}); got != want {
			t.Errorf("ImportPayments = %+v, want %+v", got, want)
		}
		for id, want := range map[string][]string{
			"NF-A": {"L1 reference 10000"},
			"NF-B": {"L1 reference 2500"},
			"NF-C": {"L2 reference 4000"}, // due first
			"NF-D": {"L2 reference 1000"},
			"NF-P": {"manual-p manual 700"},
		} {
			if diff := cmp.Diff(want, allocationsOf(t, db, id)); diff != "" {
				t.Errorf("%s's allocations (-want +got):\n%s", id, diff)
			}
		}
		for id, want := range map[string]ledger.Standing{
			"NF-A": {State: ledger.StatePaid, PaidCents: 10000},
			"NF-B": {State: ledger.StatePaid, PaidCents: 2500},
			"NF-C": {State: ledger.StatePaid, PaidCents: 4000},
			"NF-D": {State: ledger.StatePartiallyPaid, OpenCents: 5000, PaidCents: 1000},
			"NF-P": {State: ledger.StatePaid, PaidCents: 700},
		} {
			if got := standing(t, db, id); got != want {
				t.Errorf("%s = %+v, want %+v", id, got, want)
			}
		}
		if got := get(t, db, "NF-A"); got.PixTxID != "ERPTXA" {
			t.Errorf("NF-A's pixTxid is now %q, want ERPTXA", got.PixTxID)
		}

		// The invoice's own txid still matches, beside the recorded ones:
		// NF-D, under DRAFTTX3, takes a payment quoting its own after one
		// quoting the second reminder's.
		dd := d
		dd.PixTxID = "ERPTXD"
		must[ledger.UpsertCounts](t)(upsert(t, db, dd))
		got = importPayments(t, db,
			ledger.PaymentRecord{Source: "csv:extrato.csv", SourceRef: "L4", AmountCents: 2000, Currency: "BRL", PaidOn: "2026-12-03",
				Method: ledger.MethodPIX, Reference: "DRAFTTX3"},
			ledger.PaymentRecord{Source: "csv:extrato.csv", SourceRef: "L5", AmountCents: 3000, Currency: "BRL", PaidOn: "2026-12-03",
				Method: ledger.MethodPIX, Reference: "ERPTXD"})
		if got.MatchedReference != 2 || got.AllocatedCents != 5000 {
			t.Errorf("ImportPayments = %+v, want 2 matched by reference, 5000 allocated", got)
		}
		if got := standing(t, db, "NF-D"); got.State != ledger.StatePaid {
			t.Errorf("NF-D = %+v, want paid", got)
		}
		if got := must[[]ledger.RecordedReference](t)(ledger.RecordedReferences(ctx, db, "NF-D")); len(got) != 1 || got[0].Reference != "DRAFTTX3" {
			t.Errorf("NF-D's recorded references after an upsert = %+v, want DRAFTTX3", got)
		}
	})
}

// TestAddReferenceRefuses: a bad argument is invalid_arguments naming it,
// never holding its value, and records nothing.
func TestAddReferenceRefuses(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		must[ledger.UpsertCounts](t)(upsert(t, db, inv("NF-1", "C-1", 1000, "2026-12-10")))
		secret := "S3CR3T"
		for _, tt := range []struct {
			name               string
			ref, source, draft string
			field              string
		}{
			{"no reference", "", "reminder", "d_1", "reference"},
			{"reference with a leading space", " " + secret, "reminder", "d_1", "reference"},
			{"reference with a trailing space", secret + " ", "reminder", "d_1", "reference"},
			{"reference with a control", secret + "\x00", "reminder", "d_1", "reference"},
			{"reference with a bidi override", secret + "\u202e", "reminder", "d_1", "reference"},
			{"reference of 36 characters", secret + strings.Repeat("9", 30), "reminder", "d_1", "reference"},
			{"no source", secret, "", "d_1", "source"},
			{"no source id", secret, "reminder", "", "sourceId"},
			{"source id with a newline", secret, "reminder", "d_1\n", "sourceId"},
		} {
			err := addReference(db, []string{"NF-1"}, tt.ref, tt.source, tt.draft)
			if c, f := code(err); c != failure.InvalidArguments || f != tt.field || strings.Contains(err.Error(), secret) {
				t.Errorf("%s: AddReference = %v (%s on %s), want invalid_arguments on %s without the value", tt.name, err, c, f, tt.field)
			}
		}
		if n := storetest.Count(t, db, "ledger_reference"); n != 0 {
			t.Errorf("ledger_reference holds %d rows after refusals, want 0", n)
		}
		for _, ref := range []string{strings.Repeat("X", ledger.MaxReferenceLen), "pedido 7", "Pedido nº 7"} {
			if err := addReference(db, []string{"NF-1"}, ref, ledger.SourceReminder, "d_1"); err != nil {
				t.Errorf("AddReference(%q) = %v", ref, err)
			}
		}
	})
}
