package web_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// ledgerFixture is what seedConsoleLedger wrote: the invoices of each kind and the unmatched payment.
type ledgerFixture struct {
	payment string // unmatched: 150,00 from cust-a, whose two invoices of 150,00 are ambiguous
}

// seedConsoleLedger writes the ledger the pages read: cust-a's two open invoices of R$ 150,00 (one
// overdue, one disputed), cust-b's under a promise, cust-c's 55 (two pages), one paid, and
// a payment of cust-a no rule could match.
func seedConsoleLedger(t *testing.T, e *env) ledgerFixture {
	t.Helper()
	ctx := context.Background()
	now := e.clock.Now()
	day := func(d int) string { return now.UTC().AddDate(0, 0, d).Format(time.DateOnly) }
	recs := []ledger.InvoiceRecord{
		{InvoiceID: "NF-A1", CustomerID: "cust-a", CustomerName: "Açaí <Ltda>", AmountCents: 15000, Currency: "BRL", DueDate: day(-10)},
		{InvoiceID: "NF-A2", CustomerID: "cust-a", CustomerName: "Açaí <Ltda>", AmountCents: 15000, Currency: "BRL", DueDate: day(5)},
		{InvoiceID: "NF-B1", CustomerID: "cust-b", CustomerName: "Bela Vista", AmountCents: 123456, Currency: "BRL", DueDate: day(-3)},
		{InvoiceID: "NF-P1", CustomerID: "cust-p", CustomerName: "Pago SA", AmountCents: 1000, Currency: "BRL", DueDate: day(-40), Reference: "REF-P1"},
	}
	for i := range 55 {
		recs = append(recs, ledger.InvoiceRecord{InvoiceID: fmt.Sprintf("NF-C%02d", i), CustomerID: "cust-c", CustomerName: "Cia C",
			AmountCents: int64(100 + i), Currency: "BRL", DueDate: day(30 + i)})
	}
	var f ledgerFixture
	err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := ledger.UpsertInvoices(ctx, tx, recs, now); err != nil {
			return err
		}
		by := ledger.Actor{Subject: "seed"}
		if _, err := ledger.OpenDispute(ctx, tx, "NF-A2", ledger.DisputeReasons[0], "", by, now); err != nil {
			return err
		}
		if _, err := ledger.RecordPromise(ctx, tx, ledger.PromiseRecord{InvoiceID: "NF-B1", AmountCents: 123456, PromisedFor: day(7), Channel: "phone"}, by, now); err != nil {
			return err
		}
		if _, err := ledger.ImportPayments(ctx, tx, []ledger.PaymentRecord{
			{Source: "test", SourceRef: "p1", AmountCents: 1000, Currency: "BRL", PaidOn: day(0), Method: ledger.MethodPIX, Reference: "REF-P1"},
			{Source: "test", SourceRef: "a1", AmountCents: 15000, Currency: "BRL", PaidOn: day(0), Method: ledger.MethodPIX, CustomerID: "cust-a"},
		}, by, now); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := ledger.ListUnmatched(ctx, e.db, "", 10)
	if err != nil || len(page) != 1 || page[0].CustomerID != "cust-a" {
		t.Fatalf("the unmatched payments = %+v, %v; want cust-a's alone", page, err)
	}
	f.payment = page[0].ID
	return f
}

// TestConsoleLedger: the ledger, invoice and payments pages, on both stores.
func TestConsoleLedger(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		f := seedConsoleLedger(t, e)
		t.Run("roles", func(t *testing.T) { ledgerRoles(t, e, f) })
		t.Run("filters", func(t *testing.T) { ledgerFilters(t, e) })
		t.Run("bad parameters", func(t *testing.T) { ledgerBadParameters(t, e) })
		t.Run("invoice", func(t *testing.T) { ledgerInvoice(t, e) })
		t.Run("languages", func(t *testing.T) { ledgerLanguages(t, e) })
		t.Run("match", func(t *testing.T) { ledgerMatch(t, e, f) })
	})
}

// invoiceRows are the invoice ids a ledger page lists, in its order.
var invoiceRowRE = regexp.MustCompile(`<a href="/console/ledger/invoice\?id=[^"]*"><code>([^<]*)</code></a>`)

func invoiceRows(body string) []string {
	var out []string
	for _, m := range invoiceRowRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// ledgerRoles: a viewer reads the ledger and the payments but sees no match form, and a
// match forged with the viewer's own CSRF token is refused (403) and audited; a person
// without a console role and an agent see nothing.
func ledgerRoles(t *testing.T, e *env, f ledgerFixture) {
	b := e.browser(t)
	p := b.open(t, web.LedgerPath, viewer)
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, "NF-A1") || !strings.Contains(p.body, `aria-current="page">Ledger</a>`) {
		t.Fatalf("the viewer's ledger = %d, want 200 listing NF-A1, current in the navigation:\n%s", p.resp.StatusCode, p.body)
	}
	if strings.Contains(p.body, "Açaí <Ltda>") || !strings.Contains(p.body, "Açaí &lt;Ltda&gt;") {
		t.Errorf("the customer's name is not escaped:\n%s", p.body)
	}
	pay := b.get(t, web.PaymentsPath)
	if pay.resp.StatusCode != http.StatusOK || !strings.Contains(pay.body, f.payment) || !strings.Contains(pay.body, "NF-A1") {
		t.Fatalf("the viewer's payments = %d, want 200 with %s and its candidate NF-A1:\n%s", pay.resp.StatusCode, f.payment, pay.body)
	}
	if strings.Contains(pay.body, `name="paymentId"`) || strings.Count(pay.body, "<form") != 1 {
		t.Errorf("the viewer's payments page offers to match (want only the sign-out form):\n%s", pay.body)
	}
	if strings.Contains(p.body, "/console/ledger/invoice</a>") || strings.Contains(p.body, ">Invoice</a></li>") {
		t.Errorf("the invoice page is in the navigation:\n%s", p.body)
	}
	csrf := html.UnescapeString(csrfRE.FindStringSubmatch(pay.body)[1])
	forged := b.do(t, http.MethodPost, web.MatchPath, url.Values{"csrf": {csrf}, "paymentId": {f.payment}, "invoiceId": {"NF-A1"},
		"amountCents": {"15000"}, "idempotencyKey": {"form_forged"}}, b.sameSite())
	refused(t, "the viewer's forged match", forged, http.StatusForbidden, string(web.CodeOperatorRequired))
	if st := invoiceState(t, e, "NF-A1"); st != ledger.StateOpen {
		t.Errorf("after the viewer's forged match NF-A1 is %s, want open", st)
	}
	e.refusals.Flush(context.Background())
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND tool = $2 AND failure_code = $3 AND outcome = $4`,
		web.EventConsoleRefused, "POST "+web.MatchPath, string(web.CodeOperatorRequired), string(auditlog.Denied)).Scan(&n); err != nil || n != 1 {
		t.Errorf("the forged match's refusal audited %d times (%v), want once", n, err)
	}
	// Without the CSRF token, the form is refused before anything.
	refused(t, "a match without its CSRF token", b.do(t, http.MethodPost, web.MatchPath, url.Values{"paymentId": {f.payment}}, b.sameSite()),
		http.StatusForbidden, "csrf_token_invalid")

	for _, path := range []string{web.LedgerPath, web.PaymentsPath, web.InvoicePath + "?id=NF-A1"} {
		refused(t, "a person without a console role on "+path, e.browser(t).open(t, path, person("edu", mfa)), http.StatusForbidden, string(web.CodeConsoleRole))
		bot := e.browser(t).open(t, path, agent("collector-bot"))
		refused(t, "an agent on "+path, bot, http.StatusForbidden, string(web.CodeConsoleAgent))
		if strings.Contains(bot.body, "Açaí") {
			t.Errorf("the agent's refusal on %s shows the ledger:\n%s", path, bot.body)
		}
	}
	// An agent's session posting the match form, with its own CSRF token, is refused too.
	bot := e.browser(t)
	bot.open(t, web.PaymentsPath, agent("collector-bot"))
	// The console shows an agent nothing; the approval page shows it its session's token.
	botCSRF := html.UnescapeString(csrfRE.FindStringSubmatch(bot.get(t, "/approvals/"+e.ask(t, tool).ID).body)[1])
	refused(t, "an agent's match", bot.do(t, http.MethodPost, web.MatchPath, url.Values{"csrf": {botCSRF}, "paymentId": {f.payment},
		"invoiceId": {"NF-A1"}, "amountCents": {"15000"}, "idempotencyKey": {"form_bot"}}, bot.sameSite()), http.StatusForbidden, string(web.CodeConsoleAgent))
	if st := invoiceState(t, e, "NF-A1"); st != ledger.StateOpen {
		t.Errorf("after the agent's match NF-A1 is %s, want open", st)
	}
}

func invoiceState(t *testing.T, e *env, id string) ledger.State {
	t.Helper()
	inv, err := ledger.GetInvoice(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return inv.State
}

// ledgerFilters: each filter chooses its invoices, and the pages are keyset pages carrying
// the filter.
func ledgerFilters(t *testing.T, e *env) {
	b := e.browser(t)
	b.open(t, web.LedgerPath, viewer)
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"customer=cust-a", []string{"NF-A1", "NF-A2"}},
		{"customer=cust-a&state=open", []string{"NF-A1", "NF-A2"}},
		{"state=paid", []string{"NF-P1"}},
		{"state=paid&state=partially_paid", []string{"NF-P1"}},
		{"state=void", nil},
		{"overdue=1&state=open", []string{"NF-A1", "NF-B1"}},
		{"overdue=5&state=open", []string{"NF-A1"}},
		{"disputed=yes", []string{"NF-A2"}},
		{"disputed=no&customer=cust-a", []string{"NF-A1"}},
		{"promise=1", []string{"NF-B1"}},
		{"customer=nobody", nil},
	} {
		p := b.get(t, web.LedgerPath+"?"+c.query)
		if p.resp.StatusCode != http.StatusOK {
			t.Errorf("?%s = %d:\n%s", c.query, p.resp.StatusCode, p.body)
			continue
		}
		if got := invoiceRows(p.body); strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("?%s lists %v, want %v", c.query, got, c.want)
		}
		if c.want == nil && !strings.Contains(p.body, "No invoice matches the filter.") {
			t.Errorf("?%s: no word that nothing matches:\n%s", c.query, p.body)
		}
	}
	// The filter form shows what was asked.
	p := b.get(t, web.LedgerPath+"?customer=cust-a&state=open&disputed=no&promise=1&overdue=3")
	for _, want := range []string{`name="customer" value="cust-a"`, `value="open" checked`, `value="no" selected`, `name="promise" value="1" checked`, `value="3"`} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the filter form does not keep %s:\n%s", want, p.body)
		}
	}
	// cust-c's 55 invoices: 50, then 5, the filter kept in the next page's link.
	first := b.get(t, web.LedgerPath+"?customer=cust-c")
	rows := invoiceRows(first.body)
	m := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(first.body)
	if len(rows) != 50 || rows[0] != "NF-C00" || m == nil {
		t.Fatalf("cust-c's first page lists %d (%v…), next %v; want 50 from NF-C00 and a next page", len(rows), rows[:min(1, len(rows))], m)
	}
	next := html.UnescapeString(m[1])
	if !strings.Contains(next, "customer=cust-c") || !strings.Contains(next, "after=") {
		t.Errorf("the next page's link %q drops the filter or the cursor", next)
	}
	second := b.get(t, next)
	if rows := invoiceRows(second.body); strings.Join(rows, ",") != "NF-C50,NF-C51,NF-C52,NF-C53,NF-C54" {
		t.Errorf("cust-c's second page lists %v, want NF-C50…NF-C54", rows)
	}
	if strings.Contains(second.body, `rel="next"`) || !strings.Contains(second.body, ">First page</a>") {
		t.Errorf("the last page has a next page, or no way to the first:\n%s", second.body)
	}
}

// ledgerBadParameters: a bad query parameter is refused (400), naming it, in both languages.
func ledgerBadParameters(t *testing.T, e *env) {
	b := e.browser(t)
	b.open(t, web.LedgerPath, viewer)
	for _, c := range []struct{ path, field string }{
		{web.LedgerPath + "?state=closed", "state"},
		{web.LedgerPath + "?overdue=-1", "overdue"},
		{web.LedgerPath + "?overdue=ten", "overdue"},
		{web.LedgerPath + "?disputed=maybe", "disputed"},
		{web.LedgerPath + "?promise=yes", "promise"},
		{web.LedgerPath + "?after=not-a-cursor", "after"},
		{web.LedgerPath + "?customer=" + strings.Repeat("x", 201), "customer"},
		{web.PaymentsPath + "?after=%21%21", "after"},
		{web.InvoicePath, "id"},
		{web.InvoicePath + "?id=", "id"},
	} {
		for lang, headline := range map[string]string{"en": "A field is not valid", "pt-BR": "Um campo não é válido"} {
			sep := "?"
			if strings.Contains(c.path, "?") {
				sep = "&"
			}
			p := b.get(t, c.path+sep+"lang="+lang)
			refused(t, c.path+" in "+lang, p, http.StatusBadRequest, string(failure.InvalidArguments))
			if !strings.Contains(p.body, string(failure.InvalidArguments)+": "+c.field+": ") || !strings.Contains(p.body, headline) {
				t.Errorf("%s in %s does not name the field %s under %q:\n%s", c.path, lang, c.field, headline, p.body)
			}
		}
	}
	p := b.get(t, web.InvoicePath+"?id=NF-404")
	refused(t, "an unknown invoice", p, http.StatusNotFound, "not_found")
	if !strings.Contains(p.body, "not_found: id: ") {
		t.Errorf("an unknown invoice does not name the field id:\n%s", p.body)
	}
}

// ledgerInvoice: an invoice with its promise, dispute, allocations; the subjects of
// reminders only to who reads message bodies.
func ledgerInvoice(t *testing.T, e *env) {
	b := e.browser(t)
	p := b.open(t, web.InvoicePath+"?id=NF-B1", viewer)
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, "Bela Vista") || !strings.Contains(p.body, "R$ 1,234.56") ||
		!strings.Contains(p.body, "phone") || !strings.Contains(p.body, "No open dispute.") || !strings.Contains(p.body, "No payment is allocated") {
		t.Errorf("NF-B1's page = %d, want its customer, amount, promise, no dispute, no allocation:\n%s", p.resp.StatusCode, p.body)
	}
	a2 := b.get(t, web.InvoicePath+"?id=NF-A2")
	if !strings.Contains(a2.body, string(ledger.DisputeReasons[0])) || !strings.Contains(a2.body, "No promise to pay was recorded.") {
		t.Errorf("NF-A2's page does not show its dispute:\n%s", a2.body)
	}
	paid := b.get(t, web.InvoicePath+"?id=NF-P1")
	if !strings.Contains(paid.body, `id="invoice-state">paid</span>`) || !strings.Contains(paid.body, "carries its reference") {
		t.Errorf("NF-P1's page does not show it paid by its reference:\n%s", paid.body)
	}
}

// ledgerLanguages: amounts, dates and words as each reader writes them.
func ledgerLanguages(t *testing.T, e *env) {
	b := e.browser(t)
	b.open(t, web.LedgerPath, viewer)
	due, err := ledger.GetInvoice(context.Background(), e.db, "NF-B1")
	if err != nil {
		t.Fatal(err)
	}
	d, _ := time.Parse(time.DateOnly, due.DueDate)
	pt := b.get(t, web.LedgerPath+"?customer=cust-b&lang=pt-BR")
	for _, want := range []string{`<html lang="pt-BR"`, "Carteira", "R$ 1.234,56", d.Format("02/01/2006"), "promessa de pagamento", "em aberto", "Próxima página"} {
		if want == "Próxima página" {
			continue // one page only
		}
		if !strings.Contains(pt.body, want) {
			t.Errorf("the ledger in Portuguese lacks %q:\n%s", want, pt.body)
		}
	}
	en := b.get(t, web.LedgerPath+"?customer=cust-b&lang=en")
	for _, want := range []string{`<html lang="en"`, "Ledger", "R$ 1,234.56", due.DueDate, "promise to pay", "open"} {
		if !strings.Contains(en.body, want) {
			t.Errorf("the ledger in English lacks %q:\n%s", want, en.body)
		}
	}
	pay := b.get(t, web.PaymentsPath+"?lang=pt-BR")
	if !strings.Contains(pay.body, "Pagamentos não conciliados") || !strings.Contains(pay.body, "R$ 150,00") {
		t.Errorf("the payments page in Portuguese:\n%s", pay.body)
	}
}

var matchFormRE = regexp.MustCompile(`(?s)<form class="inline" method="post" action="([^"]*)">(.*?)</form>`)
var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)

// matchForms are the payments page's match forms: each one's fields, by invoice id.
func matchForms(body string) map[string]url.Values {
	out := map[string]url.Values{}
	for _, m := range matchFormRE.FindAllStringSubmatch(body, -1) {
		v := url.Values{}
		for _, h := range hiddenRE.FindAllStringSubmatch(m[2], -1) {
			v.Set(h[1], html.UnescapeString(h[2]))
		}
		if v.Get("invoiceId") != "" {
			out[v.Get("invoiceId")] = v
		}
	}
	return out
}

// ledgerMatch: the operator matches the unmatched payment to NF-A1 in one click, through
// the pipeline (audited as match_payment); the invoice turns paid; the form sent again
// allocates nothing more; a bad amount is refused naming the field.
func ledgerMatch(t *testing.T, e *env, f ledgerFixture) {
	b := e.browser(t)
	p := b.open(t, web.PaymentsPath+"?lang=en", operator)
	forms := matchForms(p.body)
	a1, ok := forms["NF-A1"]
	if p.resp.StatusCode != http.StatusOK || !ok || forms["NF-A2"] == nil || a1.Get("paymentId") != f.payment || a1.Get("amountCents") != "15000" {
		t.Fatalf("the operator's payments page = %d with forms %v; want one per candidate, NF-A1's for %s of 15000:\n%s", p.resp.StatusCode, forms, f.payment, p.body)
	}
	if !strings.Contains(p.body, `action="/console/payments/match?lang=en"`) {
		t.Errorf("the match form does not keep the language:\n%s", p.body)
	}
	bad := url.Values{}
	for k, v := range a1 {
		bad[k] = v
	}
	bad.Set("amountCents", "cento e cinquenta")
	bad.Set("idempotencyKey", "form_bad_amount")
	refused(t, "a match of a bad amount", b.do(t, http.MethodPost, web.MatchPath, bad, b.sameSite()), http.StatusBadRequest, string(failure.InvalidArguments))

	matched := e.audited(t, "ledger.payment.matched", auditlog.Allowed)
	done := b.do(t, http.MethodPost, web.MatchPath+"?lang=en", a1, b.sameSite())
	if done.resp.StatusCode != http.StatusSeeOther || done.location() != web.InvoicePath+"?id=NF-A1&lang=en" {
		t.Fatalf("the match = %d to %q, want 303 to NF-A1's page:\n%s", done.resp.StatusCode, done.location(), done.body)
	}
	inv := b.follow(t, done, nil)
	if !strings.Contains(inv.body, `id="invoice-state">paid</span>`) || !strings.Contains(inv.body, f.payment) || !strings.Contains(inv.body, "otto") {
		t.Errorf("NF-A1's page after the match does not show it paid by %s, by otto:\n%s", f.payment, inv.body)
	}
	if st := invoiceState(t, e, "NF-A1"); st != ledger.StatePaid {
		t.Errorf("NF-A1 is %s after the match, want paid", st)
	}
	if n := e.audited(t, "ledger.payment.matched", auditlog.Allowed); n != matched+1 {
		t.Errorf("the match was audited %d times, want once", n-matched)
	}
	// The same form again (a double click): its key answers the first answer, nothing more.
	again := b.do(t, http.MethodPost, web.MatchPath+"?lang=en", a1, b.sameSite())
	if again.resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the form sent twice = %d, want the first answer (303):\n%s", again.resp.StatusCode, again.body)
	}
	allocs, err := ledger.Allocations(context.Background(), e.db, "NF-A1")
	if err != nil || len(allocs) != 1 {
		t.Errorf("NF-A1's allocations after the form sent twice = %v, %v; want one", allocs, err)
	}
	// Nothing is left to match: the payments page says so.
	if after := b.get(t, web.PaymentsPath); !strings.Contains(after.body, "Every payment is matched.") {
		t.Errorf("the payments page after the match:\n%s", after.body)
	}
	// NF-A2's form, sent now, is refused by the ledger: the payment has nothing left.
	late := b.do(t, http.MethodPost, web.MatchPath, forms["NF-A2"], b.sameSite())
	if late.resp.StatusCode < 400 || !strings.Contains(late.body, `href="/console/payments"`) {
		t.Errorf("a match of a payment with nothing left = %d, want a refusal leading back to the payments:\n%s", late.resp.StatusCode, late.body)
	}
	if st := invoiceState(t, e, "NF-A2"); st != ledger.StateOpen {
		t.Errorf("NF-A2 is %s, want open", st)
	}
}

// TestConsolePaymentCandidates: the payments page shows a payment's best candidates, the
// amount fits first, and links to the payment's own page, which lists every candidate read
// and says its customer has more; an unknown or missing id is refused naming the field.
func TestConsolePaymentCandidates(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		ctx := context.Background()
		now := e.clock.Now()
		day := func(d int) string { return now.UTC().AddDate(0, 0, d).Format(time.DateOnly) }
		var recs []ledger.InvoiceRecord
		for i := range 55 {
			amount := int64(100 + i)
			if i == 20 || i == 21 {
				amount = 5000 // both fit the payment: ambiguous, left to a person
			}
			recs = append(recs, ledger.InvoiceRecord{InvoiceID: fmt.Sprintf("NF-D%02d", i), CustomerID: "cust-d", CustomerName: "Dona D",
				AmountCents: amount, Currency: "BRL", DueDate: day(i - 20)})
		}
		err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if _, err := ledger.UpsertInvoices(ctx, tx, recs, now); err != nil {
				return err
			}
			_, err := ledger.ImportPayments(ctx, tx, []ledger.PaymentRecord{{Source: "test", SourceRef: "d1", AmountCents: 5000, Currency: "BRL",
				PaidOn: day(0), Method: ledger.MethodPIX, CustomerID: "cust-d"}}, ledger.Actor{Subject: "seed"}, now)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		unmatched, _, err := ledger.ListUnmatched(ctx, e.db, "", 10)
		if err != nil || len(unmatched) != 1 {
			t.Fatalf("the unmatched payments = %+v, %v; want cust-d's alone", unmatched, err)
		}
		pay := unmatched[0].ID

		b := e.browser(t)
		list := b.open(t, web.PaymentsPath+"?lang=en", operator)
		forms := matchForms(list.body)
		if got := invoiceRows(list.body); strings.Join(got, ",") != "NF-D20,NF-D21,NF-D00" || len(forms) != 3 {
			t.Errorf("the payments page shows %v with %d forms, want NF-D20,NF-D21 (the amount fits) then NF-D00, each a form:\n%s", got, len(forms), list.body)
		}
		for id, f := range forms {
			var names []string
			for k := range f {
				names = append(names, k)
			}
			slices.Sort(names)
			if strings.Join(names, ",") != "amountCents,csrf,idempotencyKey,invoiceId,paymentId" || f.Get("paymentId") != pay {
				t.Errorf("%s's form sends %v, want the payment, invoice, amount, key and CSRF token", id, f)
			}
		}
		link := web.PaymentPath + "?" + url.Values{"id": {pay}, "lang": {"en"}}.Encode()
		if !strings.Contains(html.UnescapeString(list.body), `<a href="`+link+`">47+ more candidates`) {
			t.Errorf("the payments page does not link to the payment's 47+ other candidates (%s):\n%s", link, list.body)
		}

		one := b.get(t, link)
		got := invoiceRows(one.body)
		if one.resp.StatusCode != http.StatusOK || len(got) != ledger.MaxSuggestions || len(matchForms(one.body)) != ledger.MaxSuggestions ||
			strings.Join(got[:3], ",") != "NF-D20,NF-D21,NF-D00" {
			t.Fatalf("the payment's page = %d listing %d (%v…), want %d candidates each with a form, in the payments page's order:\n%s",
				one.resp.StatusCode, len(got), got[:min(3, len(got))], ledger.MaxSuggestions, one.body)
		}
		for _, want := range []string{"The customer has more open invoices than shown here.", `href="/console/payments?lang=en"`, "more candidates"} {
			if has := strings.Contains(one.body, want); has != (want != "more candidates") {
				t.Errorf("the payment's page: contains %q = %v:\n%s", want, has, one.body)
			}
		}
		if pt := b.get(t, web.PaymentsPath+"?lang=pt-BR"); !strings.Contains(html.UnescapeString(pt.body), "Mais 47+ títulos candidatos") {
			t.Errorf("the payments page in Portuguese does not link to the other candidates:\n%s", pt.body)
		}

		for _, c := range []struct {
			path   string
			status int
			code   string
		}{
			{web.PaymentPath, http.StatusBadRequest, string(failure.InvalidArguments)},
			{web.PaymentPath + "?id=" + strings.Repeat("x", 201), http.StatusBadRequest, string(failure.InvalidArguments)},
			{web.PaymentPath + "?id=pay-404", http.StatusNotFound, "not_found"},
		} {
			p := b.get(t, c.path)
			refused(t, c.path, p, c.status, c.code)
			if !strings.Contains(p.body, c.code+": id: ") {
				t.Errorf("%s does not name the field id:\n%s", c.path, p.body)
			}
		}
		refused(t, "an agent on the payment's page", e.browser(t).open(t, link, agent("collector-bot")), http.StatusForbidden, string(web.CodeConsoleAgent))
	})
}
