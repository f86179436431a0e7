package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/cnab/cnabtest"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// ledgerCLI runs cobranca commands on a migrated store of dialect, as the
// operator does, with the files it writes.
type ledgerCLI struct {
	t       testing.TB
	environ []string
	stdin   string
}

func newLedgerCLI(t testing.TB, dialect string) *ledgerCLI {
	c := &ledgerCLI{t: t, environ: []string{"COBRANCA_DATA_DIR=" + t.TempDir()}}
	if dialect == "postgres" {
		c.environ = append(c.environ, "COBRANCA_DATABASE_URL="+storetest.MigratedPostgres(t, pg)) // see eachStore
	}
	if _, _, err := c.run("migrate"); err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *ledgerCLI) run(args ...string) (string, string, error) {
	c.t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, c.environ, strings.NewReader(c.stdin), &out, &errOut)
	return out.String(), errOut.String(), err
}

func (c *ledgerCLI) file(name string, content []byte) string {
	c.t.Helper()
	p := filepath.Join(c.t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return p
}

func (c *ledgerCLI) db() store.DB {
	c.t.Helper()
	db, err := openStore(context.Background(), mustConfig(c.t, c.environ), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(func() { db.Close() })
	return db
}

// events are the audit events written so far: name, outcome, code and details.
func (c *ledgerCLI) events() []string {
	c.t.Helper()
	db := c.db()
	key, err := auditKey(mustConfig(c.t, c.environ), false)
	if err != nil {
		c.t.Fatal(err)
	}
	l, err := auditlog.New(db, key, auditlog.Options{})
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := l.Seal(context.Background()); err != nil {
		c.t.Fatal(err)
	}
	evs, err := l.Events(context.Background(), 0, 1000)
	if err != nil {
		c.t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		if e.Subject != operator() || e.ClientID != cliClientID {
			c.t.Errorf("event %s by %q through %q, want the operator through the CLI", e.Name, e.Subject, e.ClientID)
		}
		for _, s := range []string{"ACME", "MARIA", "Padaria", "pedido", "00012345"} {
			if strings.Contains(fmt.Sprintf("%+v", e), s) {
				c.t.Errorf("audit event %+v holds the file's %q", e, s)
			}
		}
		out = append(out, fmt.Sprintf("%s %s %s %v %s", e.Name, e.Outcome, e.FailureCode, e.Details, e.Tool))
	}
	return out
}

// snapshot is everything the ledger holds of ids' invoices and its payments.
func snapshot(t *testing.T, db store.DB, ids []string) string {
	t.Helper()
	ctx := context.Background()
	invs, err := ledger.GetInvoices(ctx, db, ids)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "%+v\n", invs[id])
	}
	rows, err := db.Query(ctx, "SELECT id, source, source_ref, amount_cents, left_cents FROM ledger_payment ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, src, ref string
		var amount, left int64
		if err := rows.Scan(&id, &src, &ref, &amount, &left); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s %s %d %d\n", id, src, ref, amount, left)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func paymentBySourceRef(t *testing.T, db store.DB, ref string) ledger.StoredPayment {
	t.Helper()
	var id string
	if err := db.QueryRow(context.Background(), "SELECT id FROM ledger_payment WHERE source_ref = $1", ref).Scan(&id); err != nil {
		t.Fatalf("payment %s: %v", ref, err)
	}
	p, err := ledger.GetPayment(context.Background(), db, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The invoices of the tests: inv-1 carries a nosso número, inv-6 a free
// reference, inv-3 and inv-4 have the same open amount of one customer
// (a payment of that amount is ambiguous), inv-5 alone has its amount.
const invoicesCSV = "invoiceId,customerId,customerName,amountCents,dueDate,ourNumber,reference\r\n" +
	"inv-1,c-1,ACME Comércio,151530,2026-11-20,00012345,\r\n" +
	"inv-3,c-3,Padaria,50000,2026-11-20,,\r\n" +
	"inv-4,c-3,Padaria,50000,2026-11-25,,\r\n" +
	"inv-5,c-4,Oficina,30000,2026-11-20,,\r\n" +
	"inv-6,c-5,Loja,20000,2026-11-20,,pedido-77\r\n"

var ledgerIDs = []string{"inv-1", "inv-3", "inv-4", "inv-5", "inv-6", "inv-7"}

// returnFile341 is a bank's return file: inv-1's boleto paid by PIX, a
// boleto the ledger does not know, a title only registered.
func returnFile341(generated time.Time, seq int64) []byte {
	b := cnabtest.NewBuilder(341, generated, seq)
	b.OpenBatch()
	b.Add(cnabtest.Title{Movement: "06", OurNumber: "00012345", Due: "2026-11-20", FaceCents: 151530, PayerKind: 2, PayerDoc: 11222333000181,
		PayerName: "ACME COMERCIO LTDA", Reasons: "61", PaidCents: 151530, CreditedCents: 151180, OccurredOn: "2026-11-28", CreditedOn: "2026-11-30"})
	b.Add(cnabtest.Title{Movement: "06", OurNumber: "00099999", Due: "2026-11-20", FaceCents: 1000, PayerKind: 1, PayerDoc: 1234567890,
		PayerName: "MARIA DA SILVA", PaidCents: 1000, CreditedCents: 650, OccurredOn: "2026-11-28", CreditedOn: "2026-11-30"})
	b.Add(cnabtest.Title{Movement: "02", OurNumber: "00012399", Due: "2026-12-20", FaceCents: 9999, PayerKind: 2, PayerDoc: 11222333000181, PayerName: "ACME COMERCIO LTDA"})
	b.CloseBatch()
	return b.Bytes("\r\n")
}

// TestLedgerImports drives `cobranca invoices import`, `payments import`
// and `payments match` on SQLite and on PostgreSQL: files imported whole
// or refused whole by line and column, the matching rules, a file
// imported twice changing nothing, a payment matched by hand, and one
// audit event per run with counts only.
func TestLedgerImports(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			c := newLedgerCLI(t, dialect)
			ctx := context.Background()

			if out, _, err := c.run("invoices", "import", c.file("invoices.csv", []byte(invoicesCSV))); err != nil || out != "imported 5 invoice(s): 5 created, 0 updated, 0 unchanged\n" {
				t.Fatalf("invoices import = %q, %v", out, err)
			}
			// JSON Lines on stdin: one new, one changed, one the same.
			c.stdin = `{"invoiceId":"inv-7","customerId":"c-6","amountCents":100,"dueDate":"2026-11-20"}` + "\n" +
				`{"invoiceId":"inv-6","customerId":"c-5","customerName":"Loja Nova","amountCents":20000,"dueDate":"2026-11-20","reference":"pedido-77"}` + "\n" +
				`{"invoiceId":"inv-5","customerId":"c-4","customerName":"Oficina","amountCents":30000,"dueDate":"2026-11-20"}` + "\n"
			if out, _, err := c.run("invoices", "import", "--json", "-"); err != nil || out != "{\n  \"created\": 1,\n  \"rows\": 3,\n  \"unchanged\": 1,\n  \"updated\": 1\n}\n" {
				t.Fatalf("invoices import --json - = %q, %v", out, err)
			}
			c.stdin = ""

			// A bad row at the end: nothing of the file is imported, every
			// problem named by line and column, no cell quoted.
			withNew := slices.Concat(ledgerIDs, []string{"inv-8"})
			before := snapshot(t, c.db(), withNew)
			bad := "invoiceId,customerId,amountCents,dueDate\ninv-8,c-8,100,2026-11-20\ninv-1,c-1,151530,2026-11-20\ninv-9,c-9,12.50,2026-02-31\ninv-10,SEKRET\u202e,1,2026-11-20\n"
			_, _, err := c.run("invoices", "import", c.file("bad.csv", []byte(bad)))
			want := "invalid_arguments: nothing imported: 2 problem(s) in the file of invoices\n" +
				"  line 4: amountCents: must be a whole number of minor units, digits only\n" +
				"  line 5: customerId: must not contain U+202E, an invisible or formatting character that can hide or reorder text " +
				"(zero-width, default-ignorable, format or bidirectional control, variation selector, tag, line or paragraph separator)"
			if err == nil || err.Error() != want {
				t.Errorf("invoices import bad.csv = %v; want\n%s", err, want)
			}
			if after := snapshot(t, c.db(), withNew); after != before {
				t.Errorf("a refused file changed the ledger:\nbefore %s\nafter %s", before, after)
			}

			// The bank's return file: inv-1 paid by reference (its nosso
			// número), by PIX; the unknown boleto unmatched; the registered
			// title skipped.
			cnabFile := c.file("RET341.ret", returnFile341(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), 42))
			out, _, err := c.run("payments", "import", cnabFile)
			wantOut := "read 2 payment(s) from the CNAB 240 return file (1 other record(s) skipped): 2 new, 0 already imported\n" +
				"matched 1 by reference and 0 by amount, allocating 151530 (minor units); 1 unmatched; 0 left as credit\n" +
				"resolve the unmatched with `cobranca payments match PAYMENT INVOICE…` (collections.list_unmatched_payments lists them)\n"
			if err != nil || out != wantOut {
				t.Fatalf("payments import = %q, %v; want\n%s", out, err, wantOut)
			}
			db := c.db()
			inv1, err := ledger.GetInvoice(ctx, db, "inv-1")
			if err != nil || inv1.State != ledger.StatePaid {
				t.Fatalf("inv-1 after the return file = %+v, %v; want paid", inv1.Standing, err)
			}
			if p := paymentBySourceRef(t, db, "0123450000000987651/00012345/2026-11-28/2026-11-30/151530"); p.Method != ledger.MethodPIX || p.Source != "cnab240:341" || p.LeftCents != 0 {
				t.Errorf("inv-1's payment = %+v", p)
			}

			// The same file again, and the bank's next file repeating the
			// day: nothing changes.
			before = snapshot(t, db, ledgerIDs)
			for _, f := range []string{cnabFile, c.file("RET341-2.ret", returnFile341(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC), 43))} {
				out, _, err := c.run("payments", "import", "--json", f)
				var got struct {
					Format string
					Counts map[string]int64
				}
				if err != nil || json.Unmarshal([]byte(out), &got) != nil {
					t.Fatalf("payments import --json again = %q, %v", out, err)
				}
				if got.Format != "cnab240" || got.Counts["new"] != 0 || got.Counts["duplicate"] != 2 || got.Counts["allocatedCents"] != 0 {
					t.Errorf("imported again: %+v, want 2 duplicates and nothing new", got)
				}
				if after := snapshot(t, db, ledgerIDs); after != before {
					t.Errorf("importing the file again changed the ledger:\nbefore %s\nafter %s", before, after)
				}
			}

			// A CSV of payments: by amount (the one invoice of c-4 of that
			// amount within the window), ambiguous (two of c-3), by a free
			// reference with an overpayment kept as credit, out of the window.
			payments := "id,amountCents,paidOn,method,customerId,reference,payer\n" +
				"p-1,30000,2026-11-22,transfer,c-4,,\n" +
				"p-2,50000,2026-11-22,pix,c-3,,\n" +
				"p-3,25000,2026-11-21,pix,,pedido-77,\n" +
				"p-4,100,2027-12-01,pix,c-6,,\n"
			out, _, err = c.run("payments", "import", "--source", "erp", c.file("pagamentos.csv", []byte(payments)))
			if err != nil || !strings.Contains(out, "4 new, 0 already imported\nmatched 1 by reference and 1 by amount, allocating 50000 (minor units); 2 unmatched; 5000 left as credit\n") {
				t.Fatalf("payments import pagamentos.csv = %q, %v", out, err)
			}
			states := func() map[string]string {
				invs, err := ledger.GetInvoices(ctx, db, ledgerIDs)
				if err != nil {
					t.Fatal(err)
				}
				m := map[string]string{}
				for id, inv := range invs {
					m[id] = fmt.Sprintf("%s %d", inv.State, inv.OpenCents)
				}
				return m
			}
			if diff := cmp.Diff(map[string]string{"inv-1": "paid 0", "inv-3": "open 50000", "inv-4": "open 50000", "inv-5": "paid 0", "inv-6": "paid 0", "inv-7": "open 100"}, states()); diff != "" {
				t.Errorf("after the CSV (-want +got):\n%s", diff)
			}
			p2 := paymentBySourceRef(t, db, "p-2")
			if p2.Source != "csv:erp" || p2.LeftCents != 50000 {
				t.Errorf("p-2 = %+v, want unmatched from csv:erp", p2)
			}

			// A bad payment at the end: nothing of the file.
			before = snapshot(t, db, ledgerIDs)
			_, _, err = c.run("payments", "import", c.file("more.csv", []byte("id,amountCents,paidOn\np-5,100,2026-11-28\np-6,100,SEKRET\n")))
			if err == nil || err.Error() != "invalid_arguments: nothing imported: 1 problem(s) in the CSV of payments\n  line 3: paidOn: must be a date in YYYY-MM-DD form" {
				t.Errorf("payments import more.csv = %v", err)
			}
			// The same payment with another amount: a conflict, named by its line.
			_, _, err = c.run("payments", "import", "--source", "erp", c.file("conflict.csv", []byte("id,amountCents,paidOn\np-7,100,2026-11-28\np-1,30001,2026-11-22\n")))
			if fe, ok := failure.As(err); !ok || fe.Code != ledger.CodePaymentConflict || !strings.Contains(err.Error(), "nothing imported: line 3: ") {
				t.Errorf("payments import conflict.csv = %v, want payment_conflict at line 3", err)
			}
			if after := snapshot(t, db, ledgerIDs); after != before {
				t.Errorf("a refused payments file changed the ledger:\nbefore %s\nafter %s", before, after)
			}
			if _, stderr, err := c.run("payments", "import", "--source", "erp", cnabFile); !errors.Is(err, exitUsage) || !strings.Contains(stderr, "--source names the system of a CSV") {
				t.Errorf("--source with a CNAB file = %v, %q", err, stderr)
			}
			_, _, err = c.run("payments", "import", c.file("fatura.pdf", []byte("%PDF-1.7 SEKRET")))
			if err == nil || !strings.Contains(err.Error(), "not a bank file this server reads") || strings.Contains(err.Error(), "SEKRET") {
				t.Errorf("payments import fatura.pdf = %v", err)
			}

			// The operator resolves the ambiguous payment: inv-3 takes its
			// open amount, inv-4 what is left.
			unknownBoleto := paymentBySourceRef(t, db, "0123450000000987651/00099999/2026-11-28/2026-11-30/1000")
			if out, _, err := c.run("payments", "match", unknownBoleto.ID, "inv-3"); err != nil || out != "allocated payment "+unknownBoleto.ID+": inv-3 1000; 0 left as credit\n" {
				t.Errorf("payments match %s inv-3 = %q, %v", unknownBoleto.ID, out, err)
			}
			if out, _, err := c.run("payments", "match", p2.ID, "inv-3", "inv-4"); err != nil || out != "allocated payment "+p2.ID+": inv-3 49000 inv-4 1000; 0 left as credit\n" {
				t.Errorf("payments match p-2 inv-3 inv-4 = %q, %v", out, err)
			}
			p4 := paymentBySourceRef(t, db, "p-4")
			out, _, err = c.run("payments", "match", "--json", p4.ID, "inv-7=60")
			var matched struct {
				PaymentID   string
				Allocations []struct {
					InvoiceID   string
					AmountCents int64
				}
				LeftCents int64
			}
			if err != nil || json.Unmarshal([]byte(out), &matched) != nil || matched.PaymentID != p4.ID || len(matched.Allocations) != 1 ||
				matched.Allocations[0].AmountCents != 60 || matched.LeftCents != 40 {
				t.Errorf("payments match --json p-4 inv-7=60 = %q, %v", out, err)
			}
			if diff := cmp.Diff(map[string]string{"inv-1": "paid 0", "inv-3": "paid 0", "inv-4": "partially_paid 49000", "inv-5": "paid 0", "inv-6": "paid 0", "inv-7": "partially_paid 40"}, states()); diff != "" {
				t.Errorf("after matching (-want +got):\n%s", diff)
			}
			for _, tc := range []struct {
				args []string
				code failure.Code
			}{
				{[]string{p2.ID, "inv-4"}, ledger.CodeAllocationRefused}, // nothing left
				{[]string{p4.ID, "inv-1"}, ledger.CodeAllocationRefused}, // paid
				{[]string{p4.ID, "inv-7=41"}, ledger.CodeAllocationRefused},
				{[]string{p4.ID, "inv-404"}, ledger.CodeInvoiceNotFound},
				{[]string{"pay_nope", "inv-4"}, ledger.CodePaymentNotFound},
			} {
				if _, _, err := c.run(append([]string{"payments", "match"}, tc.args...)...); !isCode(err, tc.code) {
					t.Errorf("payments match %v = %v, want %s", tc.args, err, tc.code)
				}
			}
			for _, args := range [][]string{{"payments", "match", p4.ID}, {"payments", "match", p4.ID, "inv-7=1.5"}, {"payments", "match", p4.ID, "inv-7", "inv-7"}} {
				if _, _, err := c.run(args...); !errors.Is(err, exitUsage) {
					t.Errorf("%v = %v, want a usage error", args, err)
				}
			}

			wantEvents := []string{
				"ledger.invoices.imported allowed  map[created:5 rows:5 unchanged:0 updated:0] ",
				"ledger.invoices.imported allowed  map[created:1 rows:3 unchanged:1 updated:1] ",
				"ledger.invoices.imported rejected invalid_arguments map[badRows:2] ",
				"ledger.payments.imported allowed  map[allocatedCents:151530 creditCents:0 duplicate:0 matchedAmount:0 matchedReference:1 new:2 read:2 skipped:1 unmatched:1] ",
				"ledger.payments.imported allowed  map[allocatedCents:0 creditCents:0 duplicate:2 matchedAmount:0 matchedReference:0 new:0 read:2 skipped:1 unmatched:0] ",
				"ledger.payments.imported allowed  map[allocatedCents:0 creditCents:0 duplicate:2 matchedAmount:0 matchedReference:0 new:0 read:2 skipped:1 unmatched:0] ",
				"ledger.payments.imported allowed  map[allocatedCents:50000 creditCents:5000 duplicate:0 matchedAmount:1 matchedReference:1 new:4 read:4 skipped:0 unmatched:2] ",
				"ledger.payments.imported rejected invalid_arguments map[badRows:1] ",
				"ledger.payments.imported rejected payment_conflict map[] ",
				"ledger.payments.imported rejected invalid_arguments map[badRows:1] ",
				"ledger.payment.matched allowed  map[allocatedCents:1000 invoices:1 leftCents:0] payment:" + unknownBoleto.ID,
				"ledger.payment.matched allowed  map[allocatedCents:50000 invoices:2 leftCents:0] payment:" + p2.ID,
				"ledger.payment.matched allowed  map[allocatedCents:60 invoices:1 leftCents:40] payment:" + p4.ID,
				"ledger.payment.matched rejected allocation_refused map[] ",
				"ledger.payment.matched rejected allocation_refused map[] ",
				"ledger.payment.matched rejected allocation_refused map[] ",
				"ledger.payment.matched rejected invoice_not_found map[] ",
				"ledger.payment.matched rejected payment_not_found map[] ",
			}
			if diff := cmp.Diff(wantEvents, c.events()); diff != "" {
				t.Errorf("audit events (-want +got):\n%s", diff)
			}
			if out, _, err := c.run("audit", "verify"); err != nil || !strings.HasPrefix(out, fmt.Sprintf("OK %d events", len(wantEvents))) {
				t.Errorf("audit verify = %q, %v", out, err)
			}
		})
	}
}

func isCode(err error, code failure.Code) bool {
	fe, ok := failure.As(err)
	return ok && fe.Code == code
}

// TestInvoicesImportAllOrNothing: a record the store refuses (an amount
// changed on an invoice with payments), the last of its file, leaves
// nothing of the file, and is named by its line.
func TestInvoicesImportAllOrNothing(t *testing.T) {
	t.Parallel() // waits on PostgreSQL; reads no audit chain (see eachStore)
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			c := newLedgerCLI(t, dialect)
			if _, _, err := c.run("invoices", "import", c.file("invoices.csv", []byte(invoicesCSV))); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.run("payments", "import", c.file("RET.ret", returnFile341(time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC), 42))); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, c.db(), slices.Concat(ledgerIDs, []string{"inv-20"}))
			// A blank line, which CSV skips: the refused row is on line 4.
			file := "invoiceId,customerId,customerName,amountCents,dueDate\ninv-20,c-20,\"Vinte, Ltda\",100,2026-11-20\n\ninv-1,c-1,ACME,151531,2026-11-20\n"
			_, _, err := c.run("invoices", "import", c.file("change.csv", []byte(file)))
			if !isCode(err, ledger.CodeInvoiceHasPayments) || !strings.Contains(err.Error(), "nothing imported: line 4: amountCents: ") {
				t.Fatalf("invoices import change.csv = %v, want invoice_has_payments at line 4", err)
			}
			if after := snapshot(t, c.db(), slices.Concat(ledgerIDs, []string{"inv-20"})); after != before {
				t.Errorf("a refused file changed the ledger:\nbefore %s\nafter %s", before, after)
			}
			// In JSON Lines, the line is the record's.
			c.stdin = `{"invoiceId":"inv-20","customerId":"c-20","amountCents":100,"dueDate":"2026-11-20"}` + "\n" +
				`{"invoiceId":"inv-1","customerId":"c-1","amountCents":151530,"currency":"USD","dueDate":"2026-11-20"}` + "\n"
			if _, _, err := c.run("invoices", "import", "-"); !isCode(err, ledger.CodeInvoiceHasPayments) || !strings.Contains(err.Error(), "line 2: currency: ") {
				t.Errorf("invoices import - = %v, want invoice_has_payments at line 2", err)
			}
			// A file over the bound the console's import holds too is refused before it is read
			// whole, by both imports, and changes nothing.
			big := filepath.Join(t.TempDir(), "big.csv")
			f, err := os.Create(big)
			if err == nil {
				err = errors.Join(f.Truncate(ledger.MaxImportBytes+1), f.Close()) // sparse: no 64 MiB written
			}
			if err != nil {
				t.Fatal(err)
			}
			before = snapshot(t, c.db(), slices.Concat(ledgerIDs, []string{"inv-20"}))
			for _, cmd := range []string{"invoices", "payments"} {
				if _, _, err := c.run(cmd, "import", big); err == nil || !strings.Contains(err.Error(), "larger than 67108864 bytes") {
					t.Errorf("%s import of %d bytes = %v, want refused as larger than the bound", cmd, ledger.MaxImportBytes+1, err)
				}
			}
			if after := snapshot(t, c.db(), slices.Concat(ledgerIDs, []string{"inv-20"})); after != before {
				t.Errorf("a file over the bound changed the ledger:\nbefore %s\nafter %s", before, after)
			}
		})
	}
}

// TestPaymentsMatching is the matching rules as payments import applies
// them, a case a payment (a row of a CSV) and the invoices it may pay:
// by reference, by amount of the customer's one invoice in the window, and
// unmatched when ambiguous or nothing fits.
func TestPaymentsMatching(t *testing.T) {
	t.Parallel() // waits on PostgreSQL; reads no audit chain (see eachStore)
	type inv struct {
		id, customer  string
		cents         int64
		due, currency string
		txid, ourNo   string
		reference     string
		void          bool
	}
	cases := []struct {
		name     string
		invoices []inv
		payment  string // amountCents,paidOn,currency,customerId,reference
		rule     string // "reference", "amount" or "unmatched"
		credit   int64
		states   map[string]string // invoice (without the case's prefix) → "state open"
	}{
		{"PIX txid", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20", txid: "TX1"}},
			"1000,2026-11-21,,,TX1", "reference", 0, map[string]string{"a": "paid 0"}},
		{"nosso número, paid partly", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20", ourNo: "000123"}},
			"400,2026-11-21,,,000123", "reference", 0, map[string]string{"a": "partially_paid 600"}},
		{"free reference, overpaid: credit", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20", reference: "pedido 7"}},
			"1500,2026-11-21,,,pedido 7", "reference", 500, map[string]string{"a": "paid 0"}},
		{"one txid on two invoices: oldest due first", []inv{
			{id: "a", customer: "c", cents: 1000, due: "2026-11-25", txid: "TX2"}, {id: "b", customer: "c", cents: 700, due: "2026-11-20", txid: "TX2"}},
			"1200,2026-11-26,,,TX2", "reference", 0, map[string]string{"a": "partially_paid 500", "b": "paid 0"}},
		{"reference before amount", []inv{
			{id: "a", customer: "c", cents: 1000, due: "2026-11-20"}, {id: "b", customer: "c", cents: 900, due: "2026-11-20", txid: "TX3"}},
			"1000,2026-11-21,,c,TX3", "reference", 100, map[string]string{"a": "open 1000", "b": "paid 0"}},
		{"amount and customer", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20"}, {id: "b", customer: "c", cents: 999, due: "2026-11-20"}},
			"1000,2026-11-21,,c,", "amount", 0, map[string]string{"a": "paid 0", "b": "open 999"}},
		{"amount, 60 days before the due date", []inv{{id: "a", customer: "c", cents: 1000, due: "2027-01-19"}},
			"1000,2026-11-20,,c,", "amount", 0, map[string]string{"a": "paid 0"}},
		{"amount, 61 days before the due date", []inv{{id: "a", customer: "c", cents: 1000, due: "2027-01-20"}},
			"1000,2026-11-20,,c,", "unmatched", 0, map[string]string{"a": "open 1000"}},
		{"amount, 120 days after the due date", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-07-23"}},
			"1000,2026-11-20,,c,", "amount", 0, map[string]string{"a": "paid 0"}},
		{"amount, 121 days after the due date", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-07-22"}},
			"1000,2026-11-20,,c,", "unmatched", 0, map[string]string{"a": "open 1000"}},
		{"ambiguous: two invoices of the amount", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20"}, {id: "b", customer: "c", cents: 1000, due: "2026-12-20"}},
			"1000,2026-11-21,,c,", "unmatched", 0, map[string]string{"a": "open 1000", "b": "open 1000"}},
		{"the amount, another customer", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20"}},
			"1000,2026-11-21,,d,", "unmatched", 0, map[string]string{"a": "open 1000"}},
		{"another amount", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20"}},
			"1001,2026-11-21,,c,", "unmatched", 0, map[string]string{"a": "open 1000"}},
		{"a reference in another currency", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20", txid: "TX4"}},
			"1000,2026-11-21,USD,,TX4", "unmatched", 0, map[string]string{"a": "open 1000"}},
		{"the reference of a void invoice", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20", txid: "TX5", void: true}},
			"1000,2026-11-21,,,TX5", "unmatched", 0, map[string]string{"a": "void 0"}},
		{"an unknown reference, no customer", []inv{{id: "a", customer: "c", cents: 1000, due: "2026-11-20", txid: "TX6"}},
			"1000,2026-11-21,,,TX7", "unmatched", 0, map[string]string{"a": "open 1000"}},
	}
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			c := newLedgerCLI(t, dialect)
			db := c.db()
			for n, tc := range cases {
				// Each case's invoices and customers are its own.
				prefix := fmt.Sprintf("m%d-", n)
				var jsonl strings.Builder
				var ids []string
				for _, in := range tc.invoices {
					rec := ledger.InvoiceRecord{InvoiceID: prefix + in.id, CustomerID: prefix + in.customer, AmountCents: in.cents, DueDate: in.due,
						Currency: in.currency, PixTxID: in.txid, OurNumber: in.ourNo, Reference: in.reference, Void: in.void}
					if rec.PixTxID != "" {
						rec.PixTxID += strconv.Itoa(n)
					}
					if rec.OurNumber != "" {
						rec.OurNumber += strconv.Itoa(n)
					}
					if rec.Reference != "" {
						rec.Reference += " " + strconv.Itoa(n)
					}
					b, _ := json.Marshal(rec)
					jsonl.Write(append(b, '\n'))
					ids = append(ids, prefix+in.id)
				}
				c.stdin = jsonl.String()
				if _, _, err := c.run("invoices", "import", "-"); err != nil {
					t.Fatalf("%s: invoices import: %v", tc.name, err)
				}
				cells := strings.Split(tc.payment, ",")
				if cells[3] != "" {
					cells[3] = prefix + cells[3]
				}
				if cells[4] != "" {
					if strings.HasPrefix(cells[4], "TX") || strings.HasPrefix(cells[4], "000") {
						cells[4] += strconv.Itoa(n)
					} else {
						cells[4] += " " + strconv.Itoa(n)
					}
				}
				c.stdin = "id,amountCents,paidOn,currency,customerId,reference\n" + prefix + "pay," + strings.Join(cells, ",") + "\n"
				out, _, err := c.run("payments", "import", "--json", "-")
				var got struct{ Counts map[string]int64 }
				if err != nil || json.Unmarshal([]byte(out), &got) != nil {
					t.Fatalf("%s: payments import = %q, %v", tc.name, out, err)
				}
				rule := map[bool]string{true: "reference"}[got.Counts["matchedReference"] == 1]
				if got.Counts["matchedAmount"] == 1 {
					rule = "amount"
				}
				if got.Counts["unmatched"] == 1 {
					rule = "unmatched"
				}
				invs, err := ledger.GetInvoices(context.Background(), db, ids)
				if err != nil {
					t.Fatal(err)
				}
				states := map[string]string{}
				for id, inv := range invs {
					states[strings.TrimPrefix(id, prefix)] = fmt.Sprintf("%s %d", inv.State, inv.OpenCents)
				}
				if rule != tc.rule || got.Counts["creditCents"] != tc.credit {
					t.Errorf("%s: matched %q with credit %d (%v), want %q with credit %d", tc.name, rule, got.Counts["creditCents"], got.Counts, tc.rule, tc.credit)
				}
				if diff := cmp.Diff(tc.states, states); diff != "" {
					t.Errorf("%s: invoices (-want +got):\n%s", tc.name, diff)
				}
			}
		})
	}
}
