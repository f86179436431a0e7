package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/cnab/cnabtest"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// field is one field of a multipart form, in the form's order; a file when name is "file".
type field struct{ name, value string }

// multipartBody is a form of fields in order, as a browser sends it, and its content type.
func multipartBody(t *testing.T, fields ...field) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		var w io.Writer
		var err error
		if f.name == "file" {
			w, err = mw.CreateFormFile("file", "upload.txt")
		} else {
			w, err = mw.CreateFormField(f.name)
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, f.value); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

// upload posts the import form (fields in order) from the import page's site.
func (b *browser) upload(t *testing.T, fields ...field) page {
	t.Helper()
	body, ctype := multipartBody(t, fields...)
	return b.send(t, body, ctype, b.sameSite())
}

func (b *browser) send(t *testing.T, body io.Reader, ctype string, header map[string]string) page {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, b.e.base+web.ImportPath, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if b.lang != "" {
		req.Header.Set("Accept-Language", b.lang)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return page{resp: resp, url: req.URL, body: string(data)}
}

// csrfOf is the CSRF token a page's forms carry.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	m := csrfRE.FindStringSubmatch(p.body)
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", p.body)
	}
	return html.UnescapeString(m[1])
}

// importEvent is an import's audit event as stored.
type importEvent struct {
	subject, tool, outcome, failure string
	details                         map[string]int64
}

// importEvents are the audit events named name, oldest first.
func importEvents(t *testing.T, db store.DB, name string) []importEvent {
	t.Helper()
	rs, err := db.Query(context.Background(), `SELECT subject, tool, outcome, failure_code, details FROM audit_event WHERE event = $1 ORDER BY id`, name)
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	var out []importEvent
	for rs.Next() {
		var ev importEvent
		var details string
		if err := rs.Scan(&ev.subject, &ev.tool, &ev.outcome, &ev.failure, &details); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(details), &ev.details); err != nil {
			t.Fatalf("the event's details %q: %v", details, err)
		}
		out = append(out, ev)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hasInvoice reports whether the ledger holds invoice id.
func hasInvoice(t *testing.T, db store.DB, id string) bool {
	t.Helper()
	invs, err := ledger.GetInvoices(context.Background(), db, []string{id})
	if err != nil {
		t.Fatal(err)
	}
	_, ok := invs[id]
	return ok
}

const invoicesCSV = "invoiceId,customerId,customerName,amountCents,dueDate,reference,ourNumber\n" +
	"NF-I1,cust-i,Importadora Ítalo,25000,2026-12-20,REF-I1,\n" +
	"NF-I2,cust-i,Importadora Ítalo,9900,2026-12-28,,12345678\n"

// TestConsoleImport (issue 29): an operator imports a file of invoices and bank files of
// payments from the browser, as the command line does; a bad file imports nothing and names
// its lines and fields; whoever may not import is refused, and nothing is imported.
func TestConsoleImport(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		b := e.browser(t)
		p := b.open(t, web.ImportPath, operator)
		if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, `enctype="multipart/form-data"`) ||
			!strings.Contains(p.body, `aria-current="page">Import files</a>`) {
			t.Fatalf("the operator's import page = %d, want 200 with the form, current in the navigation:\n%s", p.resp.StatusCode, p.body)
		}
		csrf := csrfOf(t, p)
		t.Run("invoices", func(t *testing.T) { importInvoices(t, e, b, csrf) })
		t.Run("payments", func(t *testing.T) { importPayments(t, e, b, csrf) })
		t.Run("bad files", func(t *testing.T) { importBadFiles(t, e, b, csrf) })
		t.Run("bad forms", func(t *testing.T) { importBadForms(t, e, b, csrf) })
		t.Run("refused", func(t *testing.T) { importRefused(t, e) })
	})
}

// importInvoices: the file's invoices reach the ledger, the page counts them, the audit event
// counts them too (and holds nothing of the invoices); the same file again changes nothing.
func importInvoices(t *testing.T, e *env, b *browser, csrf string) {
	p := b.upload(t, field{"csrf", csrf}, field{"kind", "invoices"}, field{"file", invoicesCSV})
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, `id="count-created">2<`) || !strings.Contains(p.body, `id="count-rows">2<`) {
		t.Fatalf("importing 2 invoices = %d, want 200 counting 2 created:\n%s", p.resp.StatusCode, p.body)
	}
	if !hasInvoice(t, e.db, "NF-I1") || !hasInvoice(t, e.db, "NF-I2") {
		t.Fatal("after the import the ledger lacks NF-I1 or NF-I2")
	}
	if l := b.get(t, web.LedgerPath+"?customer=cust-i"); !strings.Contains(l.body, "NF-I1") || !strings.Contains(l.body, "NF-I2") {
		t.Errorf("the ledger page after the import does not list NF-I1 and NF-I2:\n%s", l.body)
	}
	again := b.upload(t, field{"csrf", csrf}, field{"kind", "invoices"}, field{"file", invoicesCSV})
	if !strings.Contains(again.body, `id="count-unchanged">2<`) {
		t.Errorf("importing the same file again does not count 2 unchanged:\n%s", again.body)
	}
	evs := importEvents(t, e.db, ledger.EventInvoicesImported)
	want := map[string]int64{"rows": 2, "created": 2, "updated": 0, "unchanged": 0}
	if len(evs) != 2 || evs[0].subject != "otto" || evs[0].outcome != string(auditlog.Allowed) || evs[0].tool != "POST "+web.ImportPath ||
		fmt.Sprint(evs[0].details) != fmt.Sprint(want) {
		t.Fatalf("the imports' audit events = %+v, want two, the first otto's, allowed, of POST %s, details %v", evs, web.ImportPath, want)
	}
	var row string
	if err := e.db.QueryRow(context.Background(), `SELECT event || tool || subject || details FROM audit_event WHERE event = $1 ORDER BY id LIMIT 1`,
		ledger.EventInvoicesImported).Scan(&row); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{"NF-I1", "cust-i", "Ítalo", "25000", "REF-I1"} {
		if strings.Contains(row, content) {
			t.Errorf("the import's audit event holds %q of the file: %s", content, row)
		}
	}
}

// importPayments: a CSV of payments, a CNAB 240 return file and an OFX statement, each
// recorded and matched; the page counts them as the command line prints them.
func importPayments(t *testing.T, e *env, b *browser, csrf string) {
	csv := "id,amountCents,paidOn,method,reference\nPAY-1,25000,2026-12-01,pix,REF-I1\n"
	p := b.upload(t, field{"csrf", csrf}, field{"kind", "payments"}, field{"file", csv})
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, `id="count-read">1<`) || !strings.Contains(p.body, `id="count-matched-reference">1<`) ||
		!strings.Contains(p.body, "CSV of payments") {
		t.Fatalf("importing a CSV of one payment = %d, want 200 counting it matched by reference:\n%s", p.resp.StatusCode, p.body)
	}
	if st := invoiceState(t, e, "NF-I1"); st != ledger.StatePaid {
		t.Errorf("after its payment's import NF-I1 is %s, want paid", st)
	}

	cn := cnabtest.NewBuilder(341, e.clock.Now(), 7)
	cn.OpenBatch()
	cn.Add(cnabtest.Title{Movement: "06", OurNumber: "12345678", DocNum: "NF-I2", Due: "2026-12-28", FaceCents: 9900, PayerKind: 2,
		PayerDoc: 11222333000181, PayerName: "IMPORTADORA ITALO", PaidCents: 9900, CreditedCents: 9550, OccurredOn: "2026-12-01", CreditedOn: "2026-12-02"})
	cn.CloseBatch()
	p = b.upload(t, field{"csrf", csrf}, field{"kind", "payments"}, field{"file", string(cn.Bytes("\r\n"))})
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, `id="count-new">1<`) || !strings.Contains(p.body, "CNAB 240 return file") {
		t.Fatalf("importing a CNAB 240 return file = %d, want 200 counting one new payment:\n%s", p.resp.StatusCode, p.body)
	}
	if st := invoiceState(t, e, "NF-I2"); st != ledger.StatePaid {
		t.Errorf("after the return file's import NF-I2 is %s, want paid", st)
	}

	ofx, err := os.ReadFile(filepath.Join("..", "ofx", "testdata", "extrato-v102.ofx"))
	if err != nil {
		t.Fatal(err)
	}
	b.lang = "pt-BR"
	p = b.upload(t, field{"csrf", csrf}, field{"kind", "payments"}, field{"file", string(ofx)})
	b.lang = ""
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, "extrato OFX") || strings.Contains(p.body, `id="count-read">0<`) ||
		!strings.Contains(p.body, "Pagamentos lidos") {
		t.Fatalf("importing an OFX statement (in Portuguese) = %d, want 200 counting its credits:\n%s", p.resp.StatusCode, p.body)
	}
	evs := importEvents(t, e.db, ledger.EventPaymentsImported)
	if len(evs) != 3 || evs[0].details["read"] != 1 || evs[0].details["matchedReference"] != 1 || evs[0].subject != "otto" {
		t.Errorf("the payments' audit events = %+v, want 3, the first otto's reading 1 payment matched by reference", evs)
	}
}

// importBadFiles: a file with problems imports nothing, and the page lists each problem with
// its line and field, in either language; a record the ledger refuses names its line too.
func importBadFiles(t *testing.T, e *env, b *browser, csrf string) {
	bad := "invoiceId,customerId,amountCents,dueDate\nNF-X1,cust-x,100,2026-12-20\nNF-X2,cust-x,12.50,2026-12-20\nNF-X3,cust-x,300,2026-02-30\n"
	p := b.upload(t, field{"csrf", csrf}, field{"kind", "invoices"}, field{"file", bad})
	if p.resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.body, "Nothing was imported") ||
		!strings.Contains(p.body, "line 3</td>") || !strings.Contains(p.body, "<code>amountCents</code>") ||
		!strings.Contains(p.body, "line 4</td>") || !strings.Contains(p.body, "<code>dueDate</code>") {
		t.Fatalf("a file of invoices with two bad rows = %d, want 400 naming line 3's amountCents and line 4's dueDate:\n%s", p.resp.StatusCode, p.body)
	}
	if hasInvoice(t, e.db, "NF-X1") {
		t.Error("the bad file's good row NF-X1 was imported")
	}
	b.lang = "pt-BR"
	pt := b.upload(t, field{"csrf", csrf}, field{"kind", "invoices"}, field{"file", bad})
	b.lang = ""
	if !strings.Contains(pt.body, "Nada foi importado") || !strings.Contains(pt.body, "linha 3</td>") {
		t.Errorf("the bad file in Portuguese does not say so, naming linha 3:\n%s", pt.body)
	}
	badBank := "id,amountCents,paidOn\nP-1,100,2026-12-01\nP-2,-5,2026-12-01\n"
	p = b.upload(t, field{"csrf", csrf}, field{"kind", "payments"}, field{"file", badBank})
	if p.resp.StatusCode != http.StatusBadRequest || !strings.Contains(p.body, "line 3</td>") || !strings.Contains(p.body, "<code>amountCents</code>") {
		t.Errorf("a CSV of payments with a bad amount = %d, want 400 naming line 3's amountCents:\n%s", p.resp.StatusCode, p.body)
	}
	// NF-I1 has a payment: the ledger refuses to change its amount, at the file's line 3.
	changed := "invoiceId,customerId,amountCents,dueDate\nNF-X9,cust-x,100,2026-12-20\nNF-I1,cust-i,26000,2026-12-20\n"
	p = b.upload(t, field{"csrf", csrf}, field{"kind", "invoices"}, field{"file", changed})
	if p.resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(p.body, "line 3</td>") ||
		!strings.Contains(p.body, string(ledger.CodeInvoiceHasPayments)) {
		t.Errorf("changing a paid invoice's amount = %d, want 422 naming line 3 and %s:\n%s", p.resp.StatusCode, ledger.CodeInvoiceHasPayments, p.body)
	}
	if hasInvoice(t, e.db, "NF-X9") {
		t.Error("the refused file's NF-X9 was imported")
	}
	var rejected []importEvent
	for _, ev := range importEvents(t, e.db, ledger.EventInvoicesImported) {
		if ev.outcome == string(auditlog.Rejected) {
			rejected = append(rejected, ev)
		}
	}
	if len(rejected) != 3 || rejected[0].details["badRows"] != 2 || rejected[0].failure != "invalid_arguments" ||
		rejected[2].failure != string(ledger.CodeInvoiceHasPayments) {
		t.Errorf("the refused imports' audit events = %+v, want 3 rejected, the first with 2 bad rows", rejected)
	}
}

// importBadForms: a form without its kind or file, with an unknown field, or without its
// CSRF token or from another site, is refused naming what is wrong, and imports nothing.
func importBadForms(t *testing.T, e *env, b *browser, csrf string) {
	file := "invoiceId,customerId,amountCents,dueDate\nNF-F1,cust-f,100,2026-12-20\n"
	for _, tc := range []struct {
		name   string
		fields []field
		status int
		code   string
	}{
		{"no kind", []field{{"csrf", csrf}, {"file", file}}, http.StatusBadRequest, "<code>invalid_arguments</code> kind:"},
		{"an unknown kind", []field{{"csrf", csrf}, {"kind", "receipts"}, {"file", file}}, http.StatusBadRequest, "<code>invalid_arguments</code> kind:"},
		{"no file", []field{{"csrf", csrf}, {"kind", "invoices"}}, http.StatusBadRequest, "<code>invalid_arguments</code> file:"},
		{"two files", []field{{"csrf", csrf}, {"kind", "invoices"}, {"file", file}, {"file", file}}, http.StatusBadRequest, "<code>invalid_arguments</code> file:"},
		{"an unknown field", []field{{"csrf", csrf}, {"kind", "invoices"}, {"source", "x"}, {"file", file}}, http.StatusBadRequest, `<code>invalid_arguments</code> &#34;source&#34;:`},
	} {
		p := b.upload(t, tc.fields...)
		if p.resp.StatusCode != tc.status || !strings.Contains(p.body, tc.code) {
			t.Errorf("%s: %d, want %d naming %s:\n%s", tc.name, p.resp.StatusCode, tc.status, tc.code, p.body)
		}
	}
	refused(t, "no CSRF token", b.upload(t, field{"kind", "invoices"}, field{"file", file}), http.StatusForbidden, "csrf_token_invalid")
	refused(t, "the token after the file", b.upload(t, field{"kind", "invoices"}, field{"file", file}, field{"csrf", csrf}), http.StatusForbidden, "csrf_token_invalid")
	body, ctype := multipartBody(t, field{"csrf", csrf}, field{"kind", "invoices"}, field{"file", file})
	refused(t, "from another site", b.send(t, body, ctype, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}),
		http.StatusForbidden, "cross_origin_request")
	p := b.send(t, strings.NewReader("kind=invoices&csrf="+csrf), "application/x-www-form-urlencoded", b.sameSite())
	refused(t, "a form not multipart", p, http.StatusBadRequest, "invalid_request")
	if hasInvoice(t, e.db, "NF-F1") {
		t.Error("a refused form imported NF-F1")
	}
}

// importRefused: a viewer sees the page without the form and its forged post is refused and
// audited; an agent's session sees nothing; nothing is imported.
func importRefused(t *testing.T, e *env) {
	file := "invoiceId,customerId,amountCents,dueDate\nNF-V1,cust-v,100,2026-12-20\n"
	v := e.browser(t)
	p := v.open(t, web.ImportPath, viewer)
	if p.resp.StatusCode != http.StatusOK || strings.Contains(p.body, "multipart/form-data") || !strings.Contains(p.body, "Importing files needs the operator role") {
		t.Fatalf("the viewer's import page = %d, want 200 without the form, saying why:\n%s", p.resp.StatusCode, p.body)
	}
	forged := v.upload(t, field{"csrf", csrfOf(t, p)}, field{"kind", "invoices"}, field{"file", file})
	refused(t, "the viewer's forged import", forged, http.StatusForbidden, string(web.CodeOperatorRequired))
	e.refusals.Flush(context.Background())
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND tool = $2 AND failure_code = $3 AND outcome = $4`,
		web.EventConsoleRefused, "POST "+web.ImportPath, string(web.CodeOperatorRequired), string(auditlog.Denied)).Scan(&n); err != nil || n != 1 {
		t.Errorf("the forged import's refusal audited %d times (%v), want once", n, err)
	}

	a := e.browser(t)
	refused(t, "an agent's import page", a.open(t, web.ImportPath, agent("collector-bot")), http.StatusForbidden, string(web.CodeConsoleAgent))
	// The console shows an agent nothing; the approval page shows it its session's token.
	ap := a.get(t, "/approvals/"+e.ask(t, tool).ID)
	refused(t, "an agent's import", a.upload(t, field{"csrf", csrfOf(t, ap)}, field{"kind", "invoices"}, field{"file", file}),
		http.StatusForbidden, string(web.CodeConsoleAgent))
	if hasInvoice(t, e.db, "NF-V1") {
		t.Error("a refused import imported NF-V1")
	}
}

// TestConsoleImportTooLarge: a body over the bound is refused before it is read (its
// Content-Length), or once the file passes the bound (sent chunked); nothing is imported.
func TestConsoleImportTooLarge(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), false)
	b := e.browser(t)
	p := b.open(t, web.ImportPath, operator)
	csrf := csrfOf(t, p)

	// Chunked: the file's bytes come until the bound is passed.
	head, ctype := multipartBody(t, field{"csrf", csrf}, field{"kind", "invoices"})
	boundary := strings.TrimPrefix(ctype, "multipart/form-data; boundary=")
	head.Truncate(head.Len() - len("--"+boundary+"--\r\n"))
	head.WriteString("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"big.csv\"\r\n\r\n")
	rows := strings.NewReader("invoiceId,customerId,amountCents,dueDate\nNF-BIG,cust-b,100,2026-12-20\n")
	filler := io.LimitReader(repeat('x'), ledger.MaxImportBytes)
	body := io.MultiReader(head, rows, filler, strings.NewReader("\r\n--"+boundary+"--\r\n"))
	refused(t, "a file over the bound", b.send(t, struct{ io.Reader }{body}, ctype, b.sameSite()), http.StatusRequestEntityTooLarge, string(web.CodeFileTooLarge))

	// Declared: refused on its Content-Length, nothing of the body read.
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", web.ImportPath, strings.TrimPrefix(e.base, "http://"),
		ctype, ledger.MaxImportBytes+1<<20)
	if err := conn.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	refused(t, "a body declared over the bound", page{resp: resp, body: string(got)}, http.StatusRequestEntityTooLarge, string(web.CodeFileTooLarge))
	if hasInvoice(t, e.db, "NF-BIG") {
		t.Error("a file over the bound imported NF-BIG")
	}
}

// repeat is an endless reader of c.
type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}
