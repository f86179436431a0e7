package ledger

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const goodLine = "00190.50095 40144.816069 06809.350314 3 37370000000100"

func TestReadInvoicesCSV(t *testing.T) {
	in := "\xef\xbb\xbfdueDate,invoiceId,customerId,amountCents,currency,customerName,boletoLine,pixTxid,ourNumber,issueDate,void,reference\n" +
		"2026-12-10,inv-1,c-1,150000,,\"Acme, Ltda\"," + goodLine + ",TX123,0001234,2026-11-10,,pedido 77\n" +
		"2026-12-11,inv-2,c-2,99,USD,,,,,,true,\n"
	got, err := ReadInvoicesCSV(strings.NewReader(in), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []InvoiceRecord{
		{InvoiceID: "inv-1", CustomerID: "c-1", CustomerName: "Acme, Ltda", AmountCents: 150000, Currency: "BRL",
			IssueDate: "2026-11-10", DueDate: "2026-12-10", PixTxID: "TX123", OurNumber: "0001234",
			BoletoLine: "00190500954014481606906809350314337370000000100", Reference: "pedido 77"},
		{InvoiceID: "inv-2", CustomerID: "c-2", AmountCents: 99, Currency: "USD", DueDate: "2026-12-11", Void: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// The required columns alone are enough.
	if _, err := ReadInvoicesCSV(strings.NewReader("invoiceId,customerId,amountCents,dueDate\ni,c,1,2026-01-01\n"), 1); err != nil {
		t.Errorf("required columns only: %v", err)
	}
}

// secret is in every refused cell: no error may quote it.
const secret = "SEKRET"

func TestReadInvoicesCSVRefuses(t *testing.T) {
	head := "invoiceId,customerId,amountCents,dueDate,currency,issueDate,void,pixTxid,ourNumber,boletoLine,customerName\n"
	row := func(cells ...string) string { return head + strings.Join(cells, ",") + "\n" }
	ok := []string{"inv-1", "c-1", "100", "2026-12-01", "", "", "", "", "", "", ""}
	with := func(i int, v string) string {
		cells := append([]string(nil), ok...)
		cells[i] = v
		return row(cells...)
	}
	cases := []struct {
		name, in string
		line     int
		column   string
		code     string
	}{
		{"empty file", "", 1, "", CodeMissing},
		{"unknown column", "invoiceId,customerId,amountCents,dueDate," + secret + "\n", 1, "column 5", CodeInvalidValue},
		{"column twice", "invoiceId,customerId,amountCents,dueDate,dueDate\n", 1, "dueDate", CodeDuplicate},
		{"required column missing", "invoiceId,customerId,dueDate\n", 1, "amountCents", CodeMissing},
		{"amount with decimals", with(2, "10.50"), 2, "amountCents", CodeInvalidFormat},
		{"negative amount", with(2, "-5"), 2, "amountCents", CodeInvalidFormat},
		{"zero amount", with(2, "0"), 2, "amountCents", CodeOutOfRange},
		{"amount too large", with(2, "1000000000001"), 2, "amountCents", CodeOutOfRange},
		{"amount beyond int64", with(2, "99999999999999999999"), 2, "amountCents", CodeInvalidFormat},
		{"empty id", with(0, ""), 2, "invoiceId", CodeInvalidText},
		{"id with a control character", with(0, secret+"\x07"), 2, "invoiceId", CodeInvalidText},
		{"customer with a bidi override", with(1, secret+"\u202e"), 2, "customerId", CodeInvalidText},
		{"id ending in a space (the customers' id rule)", with(0, secret+" "), 2, "invoiceId", CodeInvalidText},
		{"customer beginning with a space", with(1, " "+secret), 2, "customerId", CodeInvalidText},
		{"bad date shape", with(3, secret), 2, "dueDate", CodeInvalidFormat},
		{"31 February", with(3, "2026-02-31"), 2, "dueDate", CodeInvalidDate},
		{"missing due date", with(3, ""), 2, "dueDate", CodeMissing},
		{"due date before 2000", with(3, "1999-12-31"), 2, "dueDate", CodeOutOfRange},
		{"issued after due", with(5, "2026-12-02"), 2, "issueDate", CodeOutOfRange},
		{"unknown currency", with(4, "XXX"+secret), 2, "currency", CodeInvalidValue},
		{"lower-case currency", with(4, "brl"), 2, "currency", CodeInvalidValue},
		{"void spelt otherwise", with(6, "yes"+secret), 2, "void", CodeInvalidValue},
		{"txid too long", with(7, strings.Repeat("A", 26)), 2, "pixTxid", CodeInvalidFormat},
		{"txid with a dash", with(7, "TX-"+secret), 2, "pixTxid", CodeInvalidFormat},
		{"nosso número too long", with(8, strings.Repeat("1", 21)), 2, "ourNumber", CodeInvalidFormat},
		{"boleto line that does not verify", with(9, strings.Replace(goodLine, "3 3737", "4 3737", 1)), 2, "boletoLine", CodeInvalidValue},
		{"a cell too many", row(append(ok, secret)...), 2, "", CodeInvalidFormat},
		{"a broken quote", head + "\"inv-1" + secret + ",c,1,2026-12-01,,,,,,,\n", 2, "character 36", CodeInvalidFormat},
		{"a bare quote in the header", "invoice\"Id,customerId\n", 1, "character 8", CodeInvalidFormat},
		{"the same invoice twice", row(ok...) + strings.Join(ok, ",") + "\n", 3, "invoiceId", CodeDuplicate},
		{"too many rows", row(ok...) + strings.Join(append([]string{"inv-2"}, ok[1:]...), ",") + "\n" +
			strings.Join(append([]string{"inv-3"}, ok[1:]...), ",") + "\n", 4, "", CodeTooMany},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, err := ReadInvoicesCSV(strings.NewReader(c.in), 2)
			var errs RowErrors
			if !errors.As(err, &errs) {
				t.Fatalf("ReadInvoicesCSV = %v, %v; want RowErrors", recs, err)
			}
			if recs != nil {
				t.Errorf("records returned with errors: %v", recs)
			}
			e := errs[0]
			if e.Line != c.line || e.Column != c.column || e.Code != c.code {
				t.Errorf("first error = line %d column %q code %s (%v); want line %d column %q code %s",
					e.Line, e.Column, e.Code, err, c.line, c.column, c.code)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes a cell: %v", err)
			}
		})
	}
}

func TestReadInvoicesCSVReportsEveryRow(t *testing.T) {
	var b strings.Builder
	b.WriteString("invoiceId,customerId,amountCents,dueDate\n")
	for i := range 150 {
		fmt.Fprintf(&b, "inv-%d,c,x,2026-01-01\n", i)
	}
	_, err := ReadInvoicesCSV(strings.NewReader(b.String()), 1000)
	var errs RowErrors
	if !errors.As(err, &errs) || len(errs) != MaxRowErrors || errs[0].Line != 2 || errs[MaxRowErrors-1].Line != MaxRowErrors+1 {
		t.Fatalf("got %d errors (%v), want %d, lines 2..%d", len(errs), err, MaxRowErrors, MaxRowErrors+1)
	}
}

func TestReadInvoicesJSONL(t *testing.T) {
	in := `{"invoiceId":"inv-1","customerId":"c-1","amountCents":150000,"dueDate":"2026-12-10","boletoLine":"` + goodLine + `"}` + "\n" +
		`{"invoiceId":"inv-2","customerId":"c-2","amountCents":99,"currency":"USD","dueDate":"2026-12-11","void":true}` + "\r\n\n"
	got, err := ReadInvoicesJSONL(strings.NewReader(in), 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []InvoiceRecord{
		{InvoiceID: "inv-1", CustomerID: "c-1", AmountCents: 150000, Currency: "BRL", DueDate: "2026-12-10",
			BoletoLine: "00190500954014481606906809350314337370000000100"},
		{InvoiceID: "inv-2", CustomerID: "c-2", AmountCents: 99, Currency: "USD", DueDate: "2026-12-11", Void: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadInvoicesJSONLRefuses(t *testing.T) {
	const ok = `{"invoiceId":"inv-1","customerId":"c-1","amountCents":100,"dueDate":"2026-12-01"}`
	cases := []struct {
		name, in string
		line     int
		column   string
		code     string
	}{
		{"empty", "", 1, "", CodeMissing},
		{"unknown member", `{"invoiceId":"i","customerId":"c","amountCents":1,"dueDate":"2026-12-01","` + secret + `":1}`, 1, secret, CodeInvalidValue},
		{"member twice", `{"invoiceId":"i","invoiceId":"` + secret + `","customerId":"c","amountCents":1,"dueDate":"2026-12-01"}`, 1, "invoiceId", CodeDuplicate},
		{"member in another case", `{"InvoiceId":"i","customerId":"c","amountCents":1,"dueDate":"2026-12-01"}`, 1, "InvoiceId", CodeInvalidValue},
		{"amount as a string", `{"invoiceId":"i","customerId":"c","amountCents":"` + secret + `","dueDate":"2026-12-01"}`, 1, "amountCents", CodeInvalidFormat},
		{"amount with a fraction", `{"invoiceId":"i","customerId":"c","amountCents":1.5,"dueDate":"2026-12-01"}`, 1, "amountCents", CodeInvalidFormat},
		{"invalid UTF-8", `{"invoiceId":"` + secret + "\xff" + `","customerId":"c","amountCents":1,"dueDate":"2026-12-01"}`, 1, "", CodeInvalidFormat},
		{"not an object", `["` + secret + `"]`, 1, "", CodeInvalidFormat},
		{"two objects on a line", ok + ok, 1, "", CodeInvalidFormat},
		{"blank line inside", ok + "\n\n" + strings.Replace(ok, "inv-1", "inv-2", 1), 2, "", CodeInvalidFormat},
		{"the same invoice twice", ok + "\n" + ok, 2, "invoiceId", CodeDuplicate},
		{"validation", strings.Replace(ok, "2026-12-01", "2026-13-01", 1), 1, "dueDate", CodeInvalidDate},
		{"too many", ok + "\n" + strings.Replace(ok, "inv-1", "inv-2", 1) + "\n" + strings.Replace(ok, "inv-1", "inv-3", 1), 3, "", CodeTooMany},
		{"a line too long", `{"invoiceId":"` + strings.Repeat("a", maxJSONLine) + `"}`, 1, "", CodeInvalidFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			recs, err := ReadInvoicesJSONL(strings.NewReader(c.in), 2)
			var errs RowErrors
			if !errors.As(err, &errs) {
				t.Fatalf("ReadInvoicesJSONL = %v, %v; want RowErrors", recs, err)
			}
			e := errs[0]
			if e.Line != c.line || e.Column != c.column || e.Code != c.code {
				t.Errorf("first error = line %d column %q code %s (%v); want line %d column %q code %s",
					e.Line, e.Column, e.Code, err, c.line, c.column, c.code)
			}
			if c.column != secret && strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes a value: %v", err)
			}
		})
	}
}

func FuzzReadInvoices(f *testing.F) {
	f.Add("invoiceId,customerId,amountCents,dueDate\ni,c,1,2026-01-01\n")
	f.Add(`{"invoiceId":"i","customerId":"c","amountCents":1,"dueDate":"2026-01-01"}`)
	f.Add("invoiceId,customerId,amountCents,dueDate,boletoLine\ni,c,1,2026-01-01," + goodLine + "\n")
	f.Fuzz(func(t *testing.T, in string) {
		for _, read := range []func(string) ([]InvoiceRecord, error){
			func(s string) ([]InvoiceRecord, error) { return ReadInvoicesCSV(strings.NewReader(s), 50) },
			func(s string) ([]InvoiceRecord, error) { return ReadInvoicesJSONL(strings.NewReader(s), 50) },
		} {
			recs, err := read(in)
			if err != nil {
				var errs RowErrors
				if !errors.As(err, &errs) || len(errs) == 0 || len(errs) > MaxRowErrors || recs != nil {
					t.Fatalf("err = %v with %d records", err, len(recs))
				}
				continue
			}
			seen := map[string]bool{}
			for _, r := range recs {
				again := r
				if fe := again.Validate(); fe != nil || again != r {
					t.Fatalf("accepted %+v, which does not validate as it is: %v", r, fe)
				}
				if seen[r.InvoiceID] {
					t.Fatalf("accepted invoice %q twice", r.InvoiceID)
				}
				seen[r.InvoiceID] = true
			}
		}
	})
}
