package bankfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/cnab/cnabtest"
	"github.com/cobranca/cobranca/internal/ledger"
)

// secret is in every refused value: no error may quote it.
const secret = "SEKRET"

var generated = time.Date(2026, 11, 30, 7, 15, 42, 0, time.UTC)

// settled is a title paid by boleto on 2026-11-28, credited on the 30th.
func settled(ourNumber string, cents int64) cnabtest.Title {
	return cnabtest.Title{Movement: "06", OurNumber: ourNumber, DocNum: "NF-" + ourNumber, Due: "2026-11-20", FaceCents: cents,
		PayerKind: 2, PayerDoc: 11222333000181, PayerName: "ACME COMERCIO LTDA", PaidCents: cents, CreditedCents: cents - 350,
		OccurredOn: "2026-11-28", CreditedOn: "2026-11-30"}
}

// returnFile is a CNAB 240 return file of one batch of titles.
func returnFile(bank int64, titles ...cnabtest.Title) []byte {
	b := cnabtest.NewBuilder(bank, generated, 42)
	b.OpenBatch()
	for _, t := range titles {
		b.Add(t)
	}
	b.CloseBatch()
	return b.Bytes("\r\n")
}

func read(t *testing.T, raw []byte, o Options) *File {
	t.Helper()
	f, err := Read(bytes.NewReader(raw), o)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestDetect(t *testing.T) {
	cnabFile := returnFile(341, settled("1", 100))
	ofx102, err := os.ReadFile(filepath.Join("..", "ofx", "testdata", "extrato-v102.ofx"))
	if err != nil {
		t.Fatal(err)
	}
	ofx220, err := os.ReadFile(filepath.Join("..", "ofx", "testdata", "extrato-v220.ofx"))
	if err != nil {
		t.Fatal(err)
	}
	cnab400 := "02RETORNO01COBRANCA" + strings.Repeat(" ", 381) + "\r\n"
	cases := []struct {
		name string
		in   []byte
		want Format // "" refused
	}{
		{"CNAB 240", cnabFile, CNAB240},
		{"CNAB 240, LF only", bytes.ReplaceAll(cnabFile, []byte("\r\n"), []byte("\n")), CNAB240},
		{"CNAB 240 of one line, no end of line", cnabFile[:240], CNAB240},
		{"OFX 1.x", ofx102, OFX},
		{"OFX 2.x", ofx220, OFX},
		{"OFX 1.x after blank lines", append([]byte("\r\n\r\n"), ofx102...), OFX},
		{"CSV", []byte("id,amountCents,paidOn\np1,100,2026-11-28\n"), CSV},
		{"CSV with a byte order mark and quotes", []byte("\xef\xbb\xbf\"paidOn\",\"amountCents\",\"id\"\r\n"), CSV},
		{"CSV of invoices (refused later by its columns)", []byte("invoiceId,customerId,amountCents,dueDate\n"), CSV},
		{"CNAB 400", []byte(cnab400), ""},
		{"a CNAB 240 line one short", cnabFile[:239], ""},
		{"a batch record first", cnabFile[242:], ""},
		{"CSV without amountCents", []byte("id,amount,paidOn\n"), ""},
		{"XML that is not OFX", []byte(`<?xml version="1.0"?><invoice>` + secret + `</invoice>`), ""},
		{"PDF", []byte("%PDF-1.7\n" + secret), ""},
		{"empty", nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect(c.in)
			if got != c.want || (err == nil) != (c.want != "") {
				t.Fatalf("Detect = %q, %v; want %q", got, err, c.want)
			}
			if err == nil {
				return
			}
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Code != CodeUnknownFormat {
				t.Fatalf("err = %#v, want an *Error of code %s", err, CodeUnknownFormat)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error quotes the file: %v", err)
			}
		})
	}
	if _, err := Detect([]byte(cnab400)); err == nil || !strings.Contains(err.Error(), "CNAB 400") {
		t.Errorf("a CNAB 400 file: %v, want it named", err)
	}
	if _, err := Read(bytes.NewReader(nil), Options{}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Read of an empty file = %v", err)
	}
}

func TestReadCNAB(t *testing.T) {
	pix := settled("00012346", 76000)
	pix.Reasons = "61"
	pix.PayerName = "MARIA DA SILVA"
	registered := settled("00012347", 99999)
	registered.Movement = "02"
	registered.PaidCents, registered.CreditedCents, registered.OccurredOn, registered.CreditedOn = 0, 0, "", ""
	afterWriteOff := settled("00012340", 10000)
	afterWriteOff.Movement, afterWriteOff.CreditedOn = "17", ""
	otherAccount := settled("00012345", 151530)
	otherAccount.Account = 55555
	raw := returnFile(341, settled("00012345", 151530), pix, registered, afterWriteOff, settled("00012345", 151530), otherAccount)

	got := read(t, raw, Options{})
	boleto := func(ref, sourceRef string, cents int64, paidOn string) ledger.PaymentRecord {
		return ledger.PaymentRecord{Source: "cnab240:341", SourceRef: sourceRef, AmountCents: cents, Currency: "BRL", PaidOn: paidOn,
			Method: ledger.MethodBoleto, Reference: ref, Payer: "ACME COMERCIO LTDA"}
	}
	want := &File{Format: CNAB240, Skipped: 1, Places: []Place{{Line: 3}, {Line: 5}, {Line: 9}, {Line: 11}, {Line: 13}}, Payments: []ledger.PaymentRecord{
		boleto("00012345", "0123450000000987651/00012345/2026-11-28/2026-11-30/151530", 151530, "2026-11-28"),
		{Source: "cnab240:341", SourceRef: "0123450000000987651/00012346/2026-11-28/2026-11-30/76000", AmountCents: 76000, Currency: "BRL",
			PaidOn: "2026-11-28", Method: ledger.MethodPIX, Reference: "00012346", Payer: "MARIA DA SILVA"},
		boleto("00012340", "0123450000000987651/00012340/2026-11-28//10000", 10000, "2026-11-28"),
		// The same settlement twice in one file: a boleto paid twice, two payments.
		boleto("00012345", "0123450000000987651/00012345/2026-11-28/2026-11-30/151530#2", 151530, "2026-11-28"),
		// The same nosso número of another agreement: another payment.
		boleto("00012345", "0123450000000555551/00012345/2026-11-28/2026-11-30/151530", 151530, "2026-11-28"),
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}

	// Read again, and from another file the bank sends with the same
	// settlements (another sequence number, another date of generation, LF
	// endings): the same identities, so that importing either changes nothing.
	again := cnabtest.NewBuilder(341, generated.Add(24*time.Hour), 43)
	again.OpenBatch()
	for _, tt := range []cnabtest.Title{settled("00012345", 151530), pix, registered, afterWriteOff, settled("00012345", 151530), otherAccount} {
		again.Add(tt)
	}
	again.CloseBatch()
	for name, raw := range map[string][]byte{"the same file": raw, "a later file": again.Bytes("\n")} {
		if diff := cmp.Diff(want, read(t, raw, Options{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}

	// A credit date missing: the payment is dated by its occurrence; an
	// occurrence date missing: by its credit.
	noOccurrence := settled("9", 500)
	noOccurrence.OccurredOn = ""
	if got := read(t, returnFile(1, noOccurrence), Options{}).Payments[0]; got.PaidOn != "2026-11-30" || got.Source != "cnab240:001" {
		t.Errorf("a title without its occurrence date: %+v", got)
	}
}

// Every problem of a return file is refused by line and field, never
// quoting it.
func TestReadCNABRefuses(t *testing.T) {
	edit := func(tt cnabtest.Title, f func(*cnabtest.Title)) cnabtest.Title { f(&tt); return tt }
	base := settled("00012345", 151530)
	// The currency, T 131-132, is "09" as the builder writes it; "02" is the dollar.
	dollar := bytes.Split(returnFile(341, base), []byte("\r\n"))
	copy(dollar[2][130:132], "02")
	cases := []struct {
		name  string
		raw   []byte
		line  int
		field string
		code  string
	}{
		{"settled with nothing paid", returnFile(341, base, edit(base, func(t *cnabtest.Title) { t.PaidCents = 0 })), 6, "valor pago (U 78-92)", ledger.CodeOutOfRange},
		{"settled with no date", returnFile(341, edit(base, func(t *cnabtest.Title) { t.OccurredOn, t.CreditedOn = "", "" })), 4, "data da ocorrência (U 138-145)", ledger.CodeMissing},
		{"settled with no nosso número", returnFile(341, edit(base, func(t *cnabtest.Title) { t.OurNumber = "" })), 3, "nosso número (T 38-57)", ledger.CodeMissing},
		{"a control character in the payer's name", returnFile(341, edit(base, func(t *cnabtest.Title) { t.PayerName = "ACME \x07" + secret })), 3, "nome do pagador (T 149-188)", ledger.CodeInvalidFormat},
		{"another currency", bytes.Join(dollar, []byte("\r\n")), 3, "código da moeda (T 131-132)", ledger.CodeInvalidValue},
		{"a layout error", bytes.Replace(returnFile(341, base), []byte("000000000151530"), []byte("0000000001515,0"), 1), 3, "valor nominal do título (T 82-96)", ledger.CodeInvalidFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, c.raw, CNAB240, Problem{Place: Place{Line: c.line}, Field: c.field, Code: c.code}, secret, "ACME", "151530", "00012345")
		})
	}
}

func TestReadOFX(t *testing.T) {
	raw := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "ofx", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		file string
		want *File
	}{
		{"extrato-v102.ofx", &File{Format: OFX, Skipped: 1, Places: []Place{{Transaction: 1}, {Transaction: 3}}, Payments: []ledger.PaymentRecord{
			{Source: "ofx:0341/98765-1", SourceRef: "202611280001", AmountCents: 151530, Currency: "BRL", PaidOn: "2026-11-28",
				Method: ledger.MethodPIX, Reference: "TX20261128A", Payer: "PIX RECEBIDO ACME COMERCIO"},
			{Source: "ofx:0341/98765-1", SourceRef: "202611290001", AmountCents: 76000, Currency: "BRL", PaidOn: "2026-11-29",
				Method: ledger.MethodTransfer, Payer: "TED MARIA DA SILVA"},
		}}},
		{"extrato-v220.ofx", &File{Format: OFX, Places: []Place{{Transaction: 1}, {Transaction: 2}}, Payments: []ledger.PaymentRecord{
			// No REFNUM: the memo is what the customer quoted.
			{Source: "ofx:0001/12345-6", SourceRef: "A1", AmountCents: 10000, Currency: "BRL", PaidOn: "2026-11-27",
				Method: ledger.MethodPIX, Reference: "pedido 77", Payer: "PIX RECEBIDO JOSE PEREIRA"},
			{Source: "ofx:0001/12345-6", SourceRef: "A2", AmountCents: 1, Currency: "BRL", PaidOn: "2026-11-30",
				Method: ledger.MethodTransfer, Payer: "CREDITO"},
		}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			if diff := cmp.Diff(c.want, read(t, raw(c.file), Options{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// ofxStatement is an OFX 2.x statement of account and one credit.
func ofxStatement(account, trntype, fitid, name, memo string) string {
	return `<?xml version="1.0" encoding="UTF-8"?>
<?OFX OFXHEADER="200" VERSION="220" SECURITY="NONE" OLDFILEUID="NONE" NEWFILEUID="NONE"?>
<OFX><SIGNONMSGSRSV1><SONRS><STATUS><CODE>0</CODE><SEVERITY>INFO</SEVERITY></STATUS><DTSERVER>20261130083000</DTSERVER><LANGUAGE>POR</LANGUAGE></SONRS></SIGNONMSGSRSV1>
<BANKMSGSRSV1><STMTTRNRS><TRNUID>1</TRNUID><STATUS><CODE>0</CODE><SEVERITY>INFO</SEVERITY></STATUS><STMTRS><CURDEF>BRL</CURDEF>
<BANKACCTFROM><BANKID>0001</BANKID><ACCTID>` + account + `</ACCTID><ACCTTYPE>CHECKING</ACCTTYPE></BANKACCTFROM>
<BANKTRANLIST><DTSTART>20261101</DTSTART><DTEND>20261130</DTEND>
<STMTTRN><TRNTYPE>DEBIT</TRNTYPE><DTPOSTED>20261127</DTPOSTED><TRNAMT>-5.00</TRNAMT><FITID>D1</FITID><NAME>TARIFA</NAME></STMTTRN>
<STMTTRN><TRNTYPE>` + trntype + `</TRNTYPE><DTPOSTED>20261128</DTPOSTED><TRNAMT>250.00</TRNAMT><FITID>` + fitid + `</FITID><NAME>` + name + `</NAME><MEMO>` + memo + `</MEMO></STMTTRN>
</BANKTRANLIST><LEDGERBAL><BALAMT>245.00</BALAMT><DTASOF>20261130</DTASOF></LEDGERBAL></STMTRS></STMTTRNRS></BANKMSGSRSV1></OFX>`
}

// The method as far as the statement tells it.
func TestReadOFXMethod(t *testing.T) {
	cases := []struct {
		trntype, name, memo string
		want                ledger.Method
	}{
		{"CREDIT", "PIX RECEBIDO FULANO", "x", ledger.MethodPIX},
		{"XFER", "FULANO", "recebido via Pix", ledger.MethodPIX},
		{"XFER", "FULANO", "x", ledger.MethodTransfer},
		{"DIRECTDEP", "FULANO", "x", ledger.MethodTransfer},
		{"CREDIT", "TED RECEBIDA FULANO", "x", ledger.MethodTransfer},
		{"CREDIT", "DOC FULANO", "x", ledger.MethodTransfer},
		{"CREDIT", "DEPOSITO", "x", ledger.MethodOther},
		{"DEP", "PIXEL LTDA", "x", ledger.MethodOther}, // a word, not a prefix
	}
	for _, c := range cases {
		f := read(t, []byte(ofxStatement("12345-6", c.trntype, "F1", c.name, c.memo)), Options{})
		if len(f.Payments) != 1 || f.Skipped != 1 || f.Payments[0].Method != c.want {
			t.Errorf("%s %q %q: %+v, want one payment by %s", c.trntype, c.name, c.memo, f, c.want)
		}
	}
}

func TestReadOFXRefuses(t *testing.T) {
	cases := []struct {
		name, in    string
		transaction int
		field, code string
	}{
		{"no account", ofxStatement(" ", "CREDIT", "F1", "X", "m"), 0, "", ledger.CodeInvalidFormat},
		{"no FITID", ofxStatement("1", "CREDIT", " ", "X", "m"), 0, "", ledger.CodeInvalidFormat},
		{"a memo with a bidi override", ofxStatement("1", "CREDIT", "F1", "X", "\u202e"+secret), 2, "MEMO", ledger.CodeInvalidText},
		{"broken", strings.Replace(ofxStatement("1", "CREDIT", "F1", "X", "m"), "</OFX>", secret, 1), 0, "", ledger.CodeInvalidFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, []byte(c.in), OFX, Problem{Place: Place{Transaction: c.transaction}, Field: c.field, Code: c.code}, secret)
		})
	}
}

func TestReadCSV(t *testing.T) {
	in := "\xef\xbb\xbfid,paidOn,amountCents,method,currency,reference,customerId,payer\r\n" +
		"p-1,2026-11-28,151530,pix,,TX123,c-1,\"Acme, Ltda\"\r\n" +
		"p-2,2026-11-29,99,,USD,,,\r\n"
	want := &File{Format: CSV, Places: []Place{{Line: 2}, {Line: 3}}, Payments: []ledger.PaymentRecord{
		{Source: "csv:erp", SourceRef: "p-1", AmountCents: 151530, Currency: "BRL", PaidOn: "2026-11-28", Method: ledger.MethodPIX,
			Reference: "TX123", CustomerID: "c-1", Payer: "Acme, Ltda"},
		{Source: "csv:erp", SourceRef: "p-2", AmountCents: 99, Currency: "USD", PaidOn: "2026-11-29", Method: ledger.MethodOther},
	}}
	if diff := cmp.Diff(want, read(t, []byte(in), Options{CSVSource: "erp"})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := read(t, []byte("amountCents,paidOn,id\n1,2026-01-01,x\n"), Options{}); got.Payments[0].Source != "csv" {
		t.Errorf("no source named: %+v", got.Payments[0])
	}
	if _, err := Read(strings.NewReader(in), Options{CSVSource: "erp\x07"}); err == nil {
		t.Error("a source label with a control character was taken")
	}
}

func TestReadCSVRefuses(t *testing.T) {
	head := "id,amountCents,paidOn,method,currency,customerId\n"
	good := "p-1,100,2026-11-28,pix,BRL,c-1\n"
	cases := []struct {
		name, in string
		line     int
		field    string
		code     string
	}{
		{"an unknown column", "id,amountCents,paidOn," + secret + "\n", 1, "column 4", ledger.CodeInvalidValue},
		{"a required column missing", "id,amountCents,method\n", 1, "paidOn", ledger.CodeMissing},
		{"amount with decimals", head + good + "p-2,10.50,2026-11-28,pix,BRL,c-1\n", 3, "amountCents", ledger.CodeInvalidFormat},
		{"amount zero", head + "p-2,0,2026-11-28,pix,BRL,c-1\n", 2, "amountCents", ledger.CodeOutOfRange},
		{"a date of 31 February", head + "p-2,1,2026-02-31,pix,BRL,c-1\n", 2, "paidOn", ledger.CodeInvalidDate},
		{"an unknown method", head + "p-2,1,2026-02-01," + secret + ",BRL,c-1\n", 2, "method", ledger.CodeInvalidValue},
		{"an unknown currency", head + "p-2,1,2026-02-01,pix," + secret + ",c-1\n", 2, "currency", ledger.CodeInvalidValue},
		{"an empty id", head + ",1,2026-02-01,pix,BRL,c-1\n", 2, "id", ledger.CodeInvalidText},
		{"an id twice", head + good + good, 3, "id", ledger.CodeDuplicate},
		{"a cell too many", head + good + "p-2,1,2026-02-01,pix,BRL,c-1," + secret + "\n", 3, "", ledger.CodeInvalidFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checkRefused(t, []byte(c.in), CSV, Problem{Place: Place{Line: c.line}, Field: c.field, Code: c.code}, secret)
		})
	}
}

// A file of more payments than MaxPayments is refused, at the first one too many.
func TestReadCSVBound(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,amountCents,paidOn\n")
	for i := range MaxPayments + 1 {
		b.WriteString("p" + strconv.Itoa(i) + ",1,2026-11-28\n")
	}
	_, err := Read(strings.NewReader(b.String()), Options{})
	var e *Error
	if !errors.As(err, &e) || e.Problems[0].Code != ledger.CodeTooMany || e.Problems[0].Line != MaxPayments+2 {
		t.Fatalf("Read = %v, want too_many_rows at line %d", err, MaxPayments+2)
	}
}

// checkRefused reads raw and wants it refused as a file of format, its
// first problem want (but for the message), quoting none of secrets.
func checkRefused(t *testing.T, raw []byte, format Format, want Problem, secrets ...string) {
	t.Helper()
	f, err := Read(bytes.NewReader(raw), Options{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Read = %+v, %v; want an *Error", f, err)
	}
	got := e.Problems[0]
	if got.Message == "" {
		t.Errorf("a problem without a message: %+v", got)
	}
	got.Message = ""
	if got != want || e.Format != format {
		t.Errorf("problem = %+v of a %s; want %+v of a %s", got, e.Format, want, format)
	}
	for _, s := range secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error quotes the file's %q: %v", s, err)
		}
	}
}

// A CSV larger than MaxCSVBytes is refused whole, whatever its rows.
func TestReadCSVTooLarge(t *testing.T) {
	big := "id,amountCents,paidOn,payer\np-1,1,2026-11-28," + strings.Repeat("x", MaxCSVBytes) + "\n"
	_, err := Read(strings.NewReader(big), Options{})
	var e *Error
	if !errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Code != ledger.CodeTooMany || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Read of %d bytes = %v, want it refused for its size", len(big), err)
	}
}
