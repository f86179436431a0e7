package web_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

const writtenOff = "invoice.written_off"

// controller is a person of the finance team who may write invoices off, as the developer
// fills the development sign-in page.
func controller(subject, acr string) func(url.Values) {
	return func(v url.Values) { person(subject, acr)(v); v.Set("roles", collections.WriteOffRole) }
}

var keyRE = regexp.MustCompile(`<input type="hidden" name="idempotencyKey" value="([^"]*)">`)

// writeOff posts the write-off form on p (as a browser, from that page) filled with fields.
func (b *browser) writeOff(t *testing.T, p page, fields map[string]string, header map[string]string) page {
	t.Helper()
	csrf, key := csrfRE.FindStringSubmatch(p.body), keyRE.FindStringSubmatch(p.body)
	if csrf == nil || key == nil {
		t.Fatalf("no write-off form on the page:\n%s", p.body)
	}
	form := url.Values{"csrf": {html.UnescapeString(csrf[1])}, "idempotencyKey": {html.UnescapeString(key[1])}}
	for k, v := range fields {
		if v == "" {
			form.Del(k)
			continue
		}
		form.Set(k, v)
	}
	if header == nil {
		header = b.sameSite()
	}
	return b.do(t, http.MethodPost, web.WriteOffsPath, form, header)
}

func (e *env) customer(t *testing.T, id string) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Padaria São João", Email: "financeiro@padaria.example"}, e.clock.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

var invoice = map[string]string{"invoiceId": "NF-1001", "customerId": "C-1", "amountCents": "123456", "reason": "cliente em recuperação judicial"}

// TestWriteOffPage: the write-off page on both stores, through the development authorization
// server, as a browser uses it.
func TestWriteOffPage(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		e.customer(t, "C-1")
		t.Run("write off through the form", func(t *testing.T) { writeOffForm(t, e) })
		t.Run("refusals of the form", func(t *testing.T) { writeOffRefusals(t, e) })
		t.Run("the admin contracts for a session", func(t *testing.T) { sessionContracts(t, e) })
		t.Run("step-up", func(t *testing.T) { writeOffStepUp(t, e) }) // moves the clock on: last
	})
}

// writeOffForm: a stepped-up person holding the role writes an invoice off with the form; the
// write-off is theirs, audited; the same form sent again answers the same write-off; a new form
// for the invoice is refused (422, the form shown again as filled); an amount that is not a
// whole number of cents is refused naming the field; the page speaks Portuguese.
func writeOffForm(t *testing.T, e *env) {
	b := e.browser(t)
	p := b.open(t, web.WriteOffsPath, controller("carla", mfa))
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, "Write off an invoice") || !strings.Contains(p.body, "max_age=300") {
		t.Fatalf("the form = %d:\n%s", p.resp.StatusCode, p.body)
	}
	before := e.audited(t, writtenOff, auditlog.Allowed)
	done := b.writeOff(t, p, invoice, nil)
	w, err := writeoffs.ForInvoice(context.Background(), e.db, "NF-1001")
	if err != nil || done.resp.StatusCode != http.StatusOK || !strings.Contains(done.body, `id="written-off"`) || !strings.Contains(done.body, w.ID) {
		t.Fatalf("the form sent = %d (%v):\n%s", done.resp.StatusCode, err, done.body)
	}
	// The result in the reader's words: the amount as money, the time in Brasília's.
	if at := w.CreatedAt.In(time.FixedZone("BRT", -3*60*60)).Format("2006-01-02 15:04 BRT"); !strings.Contains(done.body, "R$ 1,234.56") || !strings.Contains(done.body, at+"</time>") {
		t.Errorf("the result does not say R$ 1,234.56 and %s:\n%s", at, done.body)
	}
	if w.By.Subject != "carla" || w.By.ACR != mfa || w.By.ClientID != auth.DevWebClientID || w.AmountCents != 123456 || w.Reason != invoice["reason"] {
		t.Errorf("stored %+v", w)
	}
	if n := e.audited(t, writtenOff, auditlog.Allowed); n != before+1 {
		t.Errorf("%d write-offs audited allowed, want %d", n, before+1)
	}
	if again := b.writeOff(t, p, invoice, nil); again.resp.StatusCode != http.StatusOK || !strings.Contains(again.body, w.ID) {
		t.Errorf("the same form again = %d, want the same write-off:\n%s", again.resp.StatusCode, again.body)
	}
	fresh := b.get(t, web.WriteOffsPath)
	second := b.writeOff(t, fresh, invoice, nil)
	refused(t, "a second write-off of the invoice", second, http.StatusUnprocessableEntity, string(writeoffs.CodeAlreadyWrittenOff))
	if !strings.Contains(second.body, `value="NF-1001"`) || !strings.Contains(second.body, w.ID) {
		t.Errorf("the refused form is not shown again as filled, or does not name the write-off:\n%s", second.body)
	}
	bad := b.writeOff(t, fresh, map[string]string{"invoiceId": "NF-2", "customerId": "C-1", "amountCents": "1.234,56", "reason": "x"}, nil)
	refused(t, "an amount in reais", bad, http.StatusBadRequest, string(failure.InvalidArguments))
	if !strings.Contains(bad.body, "amountCents") {
		t.Errorf("the refusal does not name amountCents:\n%s", bad.body)
	}
	refused(t, "an unknown customer", b.writeOff(t, fresh, map[string]string{"invoiceId": "NF-3", "customerId": "C-404", "amountCents": "1", "reason": "x"}, nil),
		http.StatusUnprocessableEntity, string(customers.CodeNotFound))
	b.lang = "pt-BR"
	if pt := b.get(t, web.WriteOffsPath); !strings.Contains(pt.body, "Baixar uma fatura como perda") || !strings.Contains(pt.body, `lang="pt-BR"`) {
		t.Errorf("the form in Portuguese:\n%s", pt.body)
	}
	if n := storetest.Count(t, e.db, "write_off"); n != 1 {
		t.Errorf("%d write-offs stored, want 1", n)
	}
}

// writeOffRefusals: a form posted from another site, without the session's CSRF token, or
// with no session is refused before anything runs; an agent's session and a person's without
// the role are refused the page; a JSON post with the session's cookie and no token is the
// API's 401, never run on the cookie's strength.
func writeOffRefusals(t *testing.T, e *env) {
	b := e.browser(t)
	p := b.open(t, web.WriteOffsPath, controller("bruno", mfa))
	next := map[string]string{"invoiceId": "NF-77", "customerId": "C-1", "amountCents": "500", "reason": "prescrita"}
	stored := storetest.Count(t, e.db, "write_off")
	for _, tc := range []struct {
		name   string
		got    page
		status int
		code   string
	}{
		{"a cross-site post", b.writeOff(t, p, next, map[string]string{"Sec-Fetch-Site": "cross-site"}), http.StatusForbidden, string(signin.CodeCrossOrigin)},
		{"no CSRF token", b.writeOff(t, p, with(next, "csrf", ""), nil), http.StatusForbidden, string(signin.CodeCSRFInvalid)},
		{"not signed in", e.browser(t).writeOff(t, p, next, b.sameSite()), http.StatusUnauthorized, string(signin.CodeNotSignedIn)},
	} {
		refused(t, tc.name, tc.got, tc.status, tc.code)
	}
	// A post from a foreign Origin never reaches the page: the Host and Origin guard of every
	// route refuses it first.
	if got := b.writeOff(t, p, next, map[string]string{"Origin": "https://evil.example"}); got.resp.StatusCode != http.StatusForbidden || !strings.Contains(got.body, "Origin not allowed") {
		t.Errorf("a post from a foreign Origin = %d:\n%s", got.resp.StatusCode, got.body)
	}
	if n := storetest.Count(t, e.db, "write_off"); n != stored {
		t.Errorf("refused forms stored %d write-offs", n-stored)
	}
	bot := e.browser(t)
	refused(t, "an agent's session", bot.open(t, web.WriteOffsPath, agent("bot")), http.StatusForbidden, string(failure.PersonRequired))
	// An agent's session posting the form anyway, with its own session's CSRF token (from the
	// sign-out form of a page it may see): Admin refuses it, audited denied, nothing stored.
	deniedBefore := e.audited(t, writtenOff, auditlog.Denied)
	botCSRF := csrfRE.FindStringSubmatch(bot.get(t, "/approvals/"+e.ask(t, tool).ID).body)
	if botCSRF == nil {
		t.Fatal("no CSRF token on the agent's approval page")
	}
	form := url.Values{"csrf": {html.UnescapeString(botCSRF[1])}, "idempotencyKey": {"bot-1"}}
	for k, v := range next {
		form.Set(k, v)
	}
	refused(t, "an agent's session posting the form", bot.do(t, http.MethodPost, web.WriteOffsPath, form, bot.sameSite()), http.StatusForbidden, string(failure.PersonRequired))
	if n := e.audited(t, writtenOff, auditlog.Denied); n != deniedBefore+1 || storetest.Count(t, e.db, "write_off") != stored {
		t.Errorf("%d denied write-offs audited, want %d; or the agent's form stored one", n, deniedBefore+1)
	}
	refused(t, "a person without the role", e.browser(t).open(t, web.WriteOffsPath, person("dora", mfa)), http.StatusForbidden, string(failure.PersonLacksRole))

	body, _ := json.Marshal(map[string]any{"invoiceId": "NF-78", "customerId": "C-1", "amountCents": 1, "reason": "x", "idempotencyKey": "k"})
	req, _ := http.NewRequest(http.MethodPost, e.base+web.WriteOffsPath, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.c.Do(req) // the jar sends the session cookie
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("JSON with the session's cookie = %d %q, want the API's 401", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
}

func with(m map[string]string, k, v string) map[string]string {
	c := map[string]string{}
	for a, b := range m {
		c[a] = b
	}
	c[k] = v
	return c
}

// sessionContracts: a signed-in person holding the write-off role reads GET /admin/contracts
// with the session; a person without it is refused 403 person_lacks_role, an agent's session
// 403 person_required.
func sessionContracts(t *testing.T, e *env) {
	b := e.browser(t)
	b.open(t, web.WriteOffsPath, controller("ana", mfa))
	got := b.do(t, http.MethodGet, "/admin/contracts", nil, nil)
	if got.resp.StatusCode != http.StatusOK || !strings.Contains(got.body, `"name": "`+collections.WriteOffName+`"`) {
		t.Errorf("GET /admin/contracts with a controller's session = %d:\n%.400s", got.resp.StatusCode, got.body)
	}
	other := e.browser(t)
	other.open(t, web.WriteOffsPath, person("bruno", mfa))
	if got := other.do(t, http.MethodGet, "/admin/contracts", nil, nil); got.resp.StatusCode != http.StatusForbidden ||
		!strings.Contains(got.body, string(failure.PersonLacksRole)) || strings.Contains(got.body, collections.WriteOffName) {
		t.Errorf("GET /admin/contracts with the session of a person without the role = %d:\n%.400s", got.resp.StatusCode, got.body)
	}
	bot := e.browser(t)
	bot.open(t, web.WriteOffsPath, agent("bot"))
	if got := bot.do(t, http.MethodGet, "/admin/contracts", nil, nil); got.resp.StatusCode != http.StatusForbidden || !strings.Contains(got.body, string(failure.PersonRequired)) {
		t.Errorf("GET /admin/contracts with an agent's session = %d:\n%s", got.resp.StatusCode, got.body)
	}
}

// writeOffStepUp: a person signed in without mfa is sent to sign in again (acr_values,
// max_age, prompt=login) before the form is shown, and back to it; a form sent once the sign-in
// is older than the contract's max age sends the browser to sign in again, writes nothing, and
// is audited denied.
func writeOffStepUp(t *testing.T, e *env) {
	b := e.browser(t)
	b.signIn(t, b.get(t, web.WriteOffsPath), controller("erika", "urn:password"), nil)
	first := b.do(t, http.MethodGet, web.WriteOffsPath, nil, nil)
	stepUpToForm(t, first)
	back := b.signIn(t, b.follow(t, first, nil), controller("erika", mfa), nil)
	if back.url.Path != web.WriteOffsPath || back.resp.StatusCode != http.StatusOK || keyRE.FindString(back.body) == "" {
		t.Fatalf("after the step-up: %s %d, want the form:\n%s", back.url, back.resp.StatusCode, back.body)
	}
	denied := e.audited(t, writtenOff, auditlog.Denied)
	e.clock.Advance(301 * time.Second)
	late := b.writeOff(t, back, map[string]string{"invoiceId": "NF-90", "customerId": "C-1", "amountCents": "10", "reason": "x"}, nil)
	stepUpToForm(t, late)
	if _, err := writeoffs.ForInvoice(context.Background(), e.db, "NF-90"); err == nil {
		t.Error("a form sent after the sign-in aged wrote the invoice off")
	}
	if n := e.audited(t, writtenOff, auditlog.Denied); n != denied+1 {
		t.Errorf("%d denied write-offs audited, want %d", n, denied+1)
	}
}

// stepUpToForm checks that p sends the browser to sign in again as write_off_invoice demands,
// and back to the form.
func stepUpToForm(t *testing.T, p page) {
	t.Helper()
	u := mustParse(t, p.location())
	q := u.Query()
	if p.resp.StatusCode != http.StatusSeeOther || u.Path != signin.SignInPath || q.Get("return") != web.WriteOffsPath ||
		q.Get("acr_values") != mfa || q.Get("max_age") != "300" || q.Get("prompt") != "login" {
		t.Fatalf("= %d to %q, want the step-up redirect (acr_values=%s, max_age=300, prompt=login, back to the form):\n%s", p.resp.StatusCode, u, mfa, p.body)
	}
}
