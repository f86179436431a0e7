package web_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/contract/contracttest"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// setCookie returns the Set-Cookie line of name among the browser's answers so far, the last.
func (b *browser) setCookie(name string) string {
	var line string
	for _, r := range b.hops {
		for _, c := range r.Header.Values("Set-Cookie") {
			if strings.HasPrefix(c, name+"=") {
				line = c
			}
		}
	}
	return line
}

// TestPages: the pages on both stores, through the development authorization server, as a
// browser uses them.
func TestPages(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		t.Run("sign-in round trip and sign-out", func(t *testing.T) { roundTrip(t, e) })
		t.Run("languages, escaping and headers", func(t *testing.T) { languages(t, e) })
		t.Run("approve and reject", func(t *testing.T) { approveReject(t, e) })
		t.Run("refusals of a decision", func(t *testing.T) { refusals(t, e) })
		t.Run("refusals of a sign-in", func(t *testing.T) { signinRefusals(t, e) })
		t.Run("step-up", func(t *testing.T) { stepUp(t, e) })
		t.Run("the ledger as of now", func(t *testing.T) { ledgerNow(t, e) })
		t.Run("a PIX code drawn as a QR code", func(t *testing.T) { pixQR(t, e) })
		t.Run("a sign-in dated in the future", func(t *testing.T) { futureAuthTime(t, e) })
		t.Run("idle session", func(t *testing.T) { idle(t, e) }) // moves the clock on: last
	})
}

func roundTrip(t *testing.T, e *env) {
	a := e.ask(t, tool)
	b := e.browser(t)
	first := b.do(t, http.MethodGet, "/approvals/"+a.ID, nil, nil)
	if want := signin.SignInPath + "?return=%2Fapprovals%2F" + a.ID; first.resp.StatusCode != http.StatusSeeOther || first.location() != want {
		t.Fatalf("GET the page signed out = %d to %q, want 303 to %q", first.resp.StatusCode, first.location(), want)
	}
	toIssuer := b.do(t, http.MethodGet, first.location(), nil, nil)
	authz := mustParse(t, toIssuer.location())
	q := authz.Query()
	if toIssuer.resp.StatusCode != http.StatusFound || authz.Path != authserver.AuthorizePath || q.Get("client_id") != auth.DevWebClientID ||
		q.Get("redirect_uri") != e.base+signin.CallbackPath || q.Get("response_type") != "code" || !strings.Contains(q.Get("scope"), "openid") ||
		q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || len(q.Get("state")) < 43 || len(q.Get("nonce")) < 43 {
		t.Fatalf("/signin = %d to %s, want 302 to the issuer with PKCE S256, state and nonce", toIssuer.resp.StatusCode, authz)
	}
	if c := b.setCookie("cobranca_signin"); !strings.Contains(c, "HttpOnly") || !strings.Contains(c, "SameSite=Lax") || strings.Contains(c, "Secure") {
		t.Errorf("sign-in cookie %q, want HttpOnly, SameSite=Lax, not Secure over http", c)
	}
	p := b.signIn(t, b.follow(t, toIssuer, nil), person("bruno", mfa), nil)
	if p.resp.StatusCode != http.StatusOK || p.url.Path != "/approvals/"+a.ID || !strings.Contains(p.body, "bruno") || !strings.Contains(p.body, a.ID) {
		t.Fatalf("after sign-in: %s %d, want the approval page signed in as bruno:\n%s", p.url, p.resp.StatusCode, p.body)
	}
	c := b.setCookie("cobranca_session")
	for _, want := range []string{"Path=/", "HttpOnly", "SameSite=Lax", "Max-Age=28800"} {
		if !strings.Contains(c, want) {
			t.Errorf("session cookie %q lacks %s", c, want)
		}
	}
	if strings.Contains(c, "Secure") || strings.HasPrefix(c, "__Host-") {
		t.Errorf("session cookie %q over plain http: want neither Secure nor __Host- (the browser would drop it)", c)
	}
	if c := b.setCookie("cobranca_signin"); !strings.Contains(c, "Max-Age=0") {
		t.Errorf("sign-in cookie after the callback %q, want cleared (used up)", c)
	}

	// The callback, replayed, finds nothing to finish.
	var callback string
	for _, r := range b.hops {
		if r.Request.URL.Path == signin.CallbackPath {
			callback = r.Request.URL.String()
		}
	}
	refused(t, "a replayed callback", b.do(t, http.MethodGet, callback, nil, nil), http.StatusBadRequest, string(signin.CodeStateInvalid))
	if p := b.get(t, "/approvals/"+a.ID); p.resp.StatusCode != http.StatusOK {
		t.Errorf("after a replayed callback the session is gone: %d", p.resp.StatusCode)
	}

	// Sign-out: a form with the session's CSRF token; the session row goes, and the page asks
	// to sign in again.
	sessions := storetest.Count(t, e.db, "web_session")
	refused(t, "sign-out without the CSRF token", b.do(t, http.MethodPost, signin.SignOutPath, url.Values{"return": {"/approvals/" + a.ID}}, b.sameSite()),
		http.StatusForbidden, string(signin.CodeCSRFInvalid))
	csrf := csrfRE.FindStringSubmatch(p.body)[1]
	out := b.do(t, http.MethodPost, signin.SignOutPath, url.Values{"csrf": {csrf}, "return": {"/approvals/" + a.ID}}, b.sameSite())
	if out.resp.StatusCode != http.StatusSeeOther || out.location() != "/approvals/"+a.ID || !strings.Contains(b.setCookie("cobranca_session"), "Max-Age=0") {
		t.Errorf("sign-out = %d to %q, cookie %q; want 303 back, the cookie cleared", out.resp.StatusCode, out.location(), b.setCookie("cobranca_session"))
	}
	if n := storetest.Count(t, e.db, "web_session"); n != sessions-1 {
		t.Errorf("%d sessions after sign-out, want %d", n, sessions-1)
	}
	if again := b.do(t, http.MethodGet, "/approvals/"+a.ID, nil, nil); again.resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(again.location(), signin.SignInPath) {
		t.Errorf("the page after sign-out = %d to %q, want sent to sign in", again.resp.StatusCode, again.location())
	}
}

var styleRE = regexp.MustCompile(`(?s)<style>(.*)</style>`)

func languages(t *testing.T, e *env) {
	a := e.ask(t, tool)
	b := e.browser(t)
	b.lang = "pt-BR,pt;q=0.9,en;q=0.5"
	pt := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	en := b.get(t, "/approvals/"+a.ID+"?lang=en")
	b.lang = "en-US,en;q=0.9"
	en2 := b.get(t, "/approvals/"+a.ID)
	pt2 := b.get(t, "/approvals/"+a.ID+"?lang=pt-BR")
	for _, tc := range []struct {
		name  string
		p     page
		words []string
	}{
		{"Accept-Language pt-BR", pt, []string{`<html lang="pt-BR">`, "Aprovar", "Rejeitar", "aguardando decisão", "Pedida por", "Efeitos colaterais"}},
		{"?lang=en over pt-BR", en, []string{`<html lang="en">`, ">Approve<", ">Reject<", "waiting for a decision", "Requested by", "Side effects"}},
		{"Accept-Language en", en2, []string{`<html lang="en">`, ">Approve<"}},
		{"?lang=pt-BR over en", pt2, []string{`<html lang="pt-BR">`, "Aprovar"}},
	} {
		if tc.p.resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d:\n%s", tc.name, tc.p.resp.StatusCode, tc.p.body)
		}
		for _, w := range append(tc.words, "ana", "collector-bot", tool, "sends one e-mail to the customer") {
			if !strings.Contains(tc.p.body, w) {
				t.Errorf("%s: the page lacks %q", tc.name, w)
			}
		}
		// The customer's text is text: escaped, never markup.
		if !strings.Contains(tc.p.body, "Lembrete para &lt;b&gt;Cliente &amp; Filhos&lt;/b&gt; &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") ||
			strings.Contains(tc.p.body, "<b>Cliente") || strings.Contains(tc.p.body, "<script") {
			t.Errorf("%s: the preview is not escaped:\n%s", tc.name, tc.p.body)
		}
		if strings.Contains(tc.p.body, "<script") || strings.Contains(tc.p.body, " on") && regexp.MustCompile(` on\w+=`).MatchString(tc.p.body) {
			t.Errorf("%s: the page has script", tc.name)
		}
	}
	// Refusals speak the reader's language too, beside their stable code.
	missing := "/approvals/" + ident.New(approval.Prefix)
	b.lang = "pt-BR"
	if p := b.get(t, missing); p.resp.StatusCode != http.StatusNotFound || !strings.Contains(p.body, "Não existe aprovação com este identificador.") || !strings.Contains(p.body, "<code>approval_not_found</code>") {
		t.Errorf("a refusal in pt-BR: %d:\n%s", p.resp.StatusCode, p.body)
	}
	if p := b.get(t, missing+"?lang=en"); !strings.Contains(p.body, "There is no approval with this id.") || !strings.Contains(p.body, `<html lang="en">`) {
		t.Errorf("a refusal with ?lang=en:\n%s", p.body)
	}
	// The security headers, and the one inline style allowed by its hash.
	h := pt.resp.Header
	style := styleRE.FindStringSubmatch(pt.body)
	if style == nil {
		t.Fatal("no style on the page")
	}
	sum := sha256.Sum256([]byte(style[1]))
	wantCSP := "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
	for k, want := range map[string]string{"Content-Security-Policy": wantCSP, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
		"Referrer-Policy": "same-origin", "Content-Type": "text/html; charset=utf-8", "X-Frame-Options": "DENY"} {
		if got := h.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

func approveReject(t *testing.T, e *env) {
	a, r := e.ask(t, tool), e.ask(t, tool)
	b := e.browser(t)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	approvedBefore := e.audited(t, approval.EventApproved, auditlog.Allowed)
	done := b.decide(t, p, "approve")
	if done.resp.StatusCode != http.StatusSeeOther || done.location() != "/approvals/"+a.ID {
		t.Fatalf("approve = %d to %q, want 303 back to the page:\n%s", done.resp.StatusCode, done.location(), done.body)
	}
	after := b.follow(t, done, nil)
	if !strings.Contains(after.body, "approved (waiting for the agent") || strings.Contains(after.body, `value="approve"`) {
		t.Errorf("the page after approving does not say approved, or still offers the buttons:\n%s", after.body)
	}
	got, err := e.approvals.Get(context.Background(), e.db, a.ID)
	if err != nil || got.State != approval.Approved || got.Approver == nil || got.Approver.Subject != "bruno" || got.Approver.ACR != mfa {
		t.Errorf("approval after the page approved it: %+v %v, want approved by bruno with %s", got, err, mfa)
	}
	if n := e.audited(t, approval.EventApproved, auditlog.Allowed); n != approvedBefore+1 {
		t.Errorf("%d approvals audited, want %d", n, approvedBefore+1)
	}
	// Deciding twice: refused, nothing changes.
	refused(t, "approving twice", b.decide(t, p, "reject"), http.StatusConflict, string(approval.CodeDecided))
	if s := e.state(t, a.ID); s != approval.Approved {
		t.Errorf("after a second decision the approval is %s, want approved", s)
	}

	rp := b.get(t, "/approvals/"+r.ID)
	if done := b.decide(t, rp, "reject"); done.resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject = %d:\n%s", done.resp.StatusCode, done.body)
	}
	if s := e.state(t, r.ID); s != approval.Rejected {
		t.Errorf("after the page rejected it the approval is %s", s)
	}
}

func refusals(t *testing.T, e *env) {
	a := e.ask(t, tool)
	b := e.browser(t)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	csrf := csrfRE.FindStringSubmatch(p.body)[1]
	other := csrf[:len(csrf)-1] + "A" // another token: one character changed
	if other == csrf {
		other = csrf[:len(csrf)-1] + "B"
	}
	post := func(form url.Values, header map[string]string) page {
		return b.do(t, http.MethodPost, "/approvals/"+a.ID, form, header)
	}
	refusedBefore := e.audited(t, approval.EventApproved, auditlog.Rejected)
	rejectionsBefore := e.audited(t, approval.EventRejected, auditlog.Rejected)
	for _, tc := range []struct {
		name   string
		got    page
		status int
		code   string
	}{
		{"a cross-site post (Sec-Fetch-Site)", post(url.Values{"csrf": {csrf}, "decision": {"approve"}}, map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}), http.StatusForbidden, string(signin.CodeCrossOrigin)},
		{"a cross-site post (Origin only)", post(url.Values{"csrf": {csrf}, "decision": {"approve"}}, map[string]string{"Origin": "https://evil.example"}), http.StatusForbidden, string(signin.CodeCrossOrigin)},
		{"no CSRF token", post(url.Values{"decision": {"approve"}}, b.sameSite()), http.StatusForbidden, string(signin.CodeCSRFInvalid)},
		{"another CSRF token", post(url.Values{"csrf": {other}, "decision": {"approve"}}, b.sameSite()), http.StatusForbidden, string(signin.CodeCSRFInvalid)},
		{"no decision", post(url.Values{"csrf": {csrf}, "decision": {"maybe"}}, b.sameSite()), http.StatusBadRequest, string(signin.CodeInvalidRequest)},
		{"not signed in", e.browser(t).do(t, http.MethodPost, "/approvals/"+a.ID, url.Values{"csrf": {csrf}, "decision": {"approve"}}, b.sameSite()), http.StatusUnauthorized, string(signin.CodeNotSignedIn)},
		{"an unknown approval", b.get(t, "/approvals/"+ident.New(approval.Prefix)), http.StatusNotFound, string(approval.CodeNotFound)},
		{"a malformed id", b.get(t, "/approvals/x"), http.StatusNotFound, string(approval.CodeNotFound)},
	} {
		refused(t, tc.name, tc.got, tc.status, tc.code)
	}
	if n := e.audited(t, approval.EventApproved, auditlog.Rejected); n != refusedBefore {
		t.Errorf("%d refused decisions audited for posts that never reached a decision, want %d", n, refusedBefore)
	}

	// An agent signed in: approver_is_agent.
	bot := e.browser(t)
	bp := bot.open(t, "/approvals/"+a.ID, agent("carla"))
	// Only what the decision needs: an agent sees neither the preview (customer data) nor the
	// side effects, and no buttons.
	if !strings.Contains(bp.body, `id="agent"`) || !strings.Contains(bp.body, `id="withheld"`) ||
		strings.Contains(bp.body, "Cliente &amp; Filhos") || strings.Contains(bp.body, `name="decision"`) {
		t.Errorf("an agent's page: want the content withheld and no buttons:\n%s", bp.body)
	}
	refused(t, "an agent approves", bot.decide(t, bp, "approve"), http.StatusForbidden, string(approval.CodeApproverIsAgent))
	// The requester: approver_is_requester, except where the contract allows it.
	ana := e.browser(t)
	ap := ana.open(t, "/approvals/"+a.ID, person("ana", mfa))
	if !strings.Contains(ap.body, `<p id="roles">`) || !strings.Contains(ap.body, "<code>"+contracttest.ApproverRole+"</code>") ||
		strings.Contains(ap.body, `id="lacks-role"`) || !strings.Contains(ap.body, `name="decision"`) {
		t.Errorf("a person with the role sees no role note or no buttons:\n%s", ap.body)
	}
	if strings.Contains(ap.body, `id="withheld"`) || !strings.Contains(ap.body, "Cliente &amp; Filhos") {
		t.Errorf("the requester (who holds the role) does not see the preview:\n%s", ap.body)
	}
	refused(t, "the requester approves", ana.decide(t, ap, "approve"), http.StatusForbidden, string(approval.CodeApproverIsRequester))
	// A person without the role (the developer cleared the field): the page says which role
	// deciding needs and shows no buttons; a POST all the same is refused.
	dora := e.browser(t)
	dp := dora.open(t, "/approvals/"+a.ID, func(v url.Values) { person("dora", mfa)(v); v.Set("roles", "") })
	if !strings.Contains(dp.body, `<p id="lacks-role"`) || strings.Contains(dp.body, `name="decision"`) ||
		!strings.Contains(dp.body, "<code>"+contracttest.ApproverRole+"</code>") {
		t.Errorf("a person without the role: want the role named, the refusal said and no buttons:\n%s", dp.body)
	}
	if !strings.Contains(dp.body, `id="withheld"`) || strings.Contains(dp.body, "Cliente &amp; Filhos") {
		t.Errorf("a person without the role who did not ask sees the preview:\n%s", dp.body)
	}
	refused(t, "a person without the role approves", dora.decide(t, dp, "approve"), http.StatusForbidden, string(approval.CodeApproverLacksRole))
	refused(t, "a person without the role rejects", dora.decide(t, dp, "reject"), http.StatusForbidden, string(approval.CodeApproverLacksRole))
	if s := e.state(t, a.ID); s != approval.Pending {
		t.Errorf("after refusals the approval is %s, want pending", s)
	}
	if n := e.audited(t, approval.EventApproved, auditlog.Rejected); n != refusedBefore+3 {
		t.Errorf("%d refused approvals audited, want %d (the agent's, the requester's, the one without the role)", n, refusedBefore+3)
	}
	if n := e.audited(t, approval.EventRejected, auditlog.Rejected); n != rejectionsBefore+1 {
		t.Errorf("%d refused rejections audited, want %d (the one without the role)", n, rejectionsBefore+1)
	}
	self := e.ask(t, selfTool)
	sp := ana.get(t, "/approvals/"+self.ID)
	if done := ana.decide(t, sp, "approve"); done.resp.StatusCode != http.StatusSeeOther || e.state(t, self.ID) != approval.Approved {
		t.Errorf("the requester approves what the contract lets them: %d, %s:\n%s", done.resp.StatusCode, e.state(t, self.ID), done.body)
	}
}

func signinRefusals(t *testing.T, e *env) {
	a := e.ask(t, tool)
	path := "/approvals/" + a.ID

	// Open redirects: return must be a path here.
	b := e.browser(t)
	for _, ret := range []string{"//evil.example/x", "https://evil.example/", `/\evil.example`, "javascript:alert(1)", ""} {
		p := b.do(t, http.MethodGet, signin.SignInPath+"?"+url.Values{"return": {ret}}.Encode(), nil, nil)
		refused(t, "return="+ret, p, http.StatusBadRequest, string(signin.CodeInvalidRequest))
		if p.location() != "" {
			t.Errorf("return=%s: redirected to %q", ret, p.location())
		}
	}
	for _, q := range []string{"max_age=0", "max_age=soon", "prompt=none", "acr_values=a%0Ab"} {
		refused(t, q, b.do(t, http.MethodGet, signin.SignInPath+"?return=/&"+q, nil, nil), http.StatusBadRequest, string(signin.CodeInvalidRequest))
	}

	tamper := func(param string) func(*url.URL) {
		return func(u *url.URL) {
			if q := u.Query(); q.Get(param) != "" {
				q.Set(param, q.Get(param)+"x")
				u.RawQuery = q.Encode()
			}
		}
	}
	// A callback whose state is not the one this browser's sign-in sent.
	bad := e.browser(t)
	refused(t, "a bad state", bad.signIn(t, bad.get(t, path), person("bruno", mfa), tamper("state")), http.StatusBadRequest, string(signin.CodeStateInvalid))
	// An ID token whose nonce is not the one this browser's sign-in sent (the authorization
	// request's nonce changed on its way to the issuer).
	bad = e.browser(t)
	atIssuer := bad.follow(t, bad.do(t, http.MethodGet, path, nil, nil), tamper("nonce"))
	refused(t, "a bad nonce", bad.signIn(t, atIssuer, person("bruno", mfa), nil), http.StatusBadRequest, string(signin.CodeSigninFailed))
	// Another browser's callback: this one started no sign-in.
	bad, other := e.browser(t), e.browser(t)
	var callback string
	bad.signIn(t, bad.get(t, path), person("bruno", mfa), func(u *url.URL) {
		if u.Path == signin.CallbackPath {
			callback = u.String()
			u.RawQuery = "" // the victim's browser never reaches it
		}
	})
	refused(t, "a callback in another browser", other.do(t, http.MethodGet, callback, nil, nil), http.StatusBadRequest, string(signin.CodeStateInvalid))
	// The developer denies.
	bad = e.browser(t)
	at := bad.get(t, path)
	action, values := parseForm(t, at.body)
	values.Set("action", "deny")
	refused(t, "a denied sign-in", bad.follow(t, bad.do(t, http.MethodPost, action, values, bad.sameSite()), nil), http.StatusForbidden, string(signin.CodeSigninFailed))
	for _, br := range []*browser{bad, other} {
		if p := br.do(t, http.MethodGet, path, nil, nil); p.resp.StatusCode != http.StatusSeeOther {
			t.Errorf("a browser whose sign-in was refused has a session: %d", p.resp.StatusCode)
		}
	}
}

// stepUpTo checks that p sends the browser to sign in again as the contract demands, and
// returns where.
func stepUpTo(t *testing.T, p page, id string) *url.URL {
	t.Helper()
	u := mustParse(t, p.location())
	q := u.Query()
	if p.resp.StatusCode != http.StatusSeeOther || u.Path != signin.SignInPath || q.Get("return") != "/approvals/"+id ||
		q.Get("acr_values") != mfa || q.Get("max_age") != "300" || q.Get("prompt") != "login" {
		t.Fatalf("decision = %d to %q, want the step-up redirect (acr_values=%s, max_age=300, prompt=login, back to the page):\n%s", p.resp.StatusCode, u, mfa, p.body)
	}
	return u
}

func stepUp(t *testing.T, e *env) {
	// acr not allowed: sent to sign in with acr_values; a sign-in that still lacks it is refused;
	// one with it comes back, and the decision goes through.
	a := e.ask(t, tool)
	b := e.browser(t)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", "urn:password"))
	to := stepUpTo(t, b.decide(t, p, "approve"), a.ID)
	atIssuer := b.follow(t, b.do(t, http.MethodGet, to.String(), nil, nil), nil)
	if q := atIssuer.url.Query(); q.Get("acr_values") != mfa || q.Get("max_age") != "300" || q.Get("prompt") != "login" {
		t.Errorf("the issuer was asked %s, want acr_values, max_age and prompt=login forwarded", atIssuer.url.RawQuery)
	}
	if _, v := parseForm(t, atIssuer.body); v.Get("acr") != mfa {
		t.Errorf("the development sign-in page pre-selects acr %q, want %q", v.Get("acr"), mfa)
	}
	refused(t, "a step-up sign-in without the acr", b.signIn(t, atIssuer, person("bruno", "urn:password"), nil), http.StatusForbidden, "insufficient_user_authentication")
	if s := e.state(t, a.ID); s != approval.Pending {
		t.Errorf("after a failed step-up the approval is %s", s)
	}
	back := b.signIn(t, b.follow(t, b.do(t, http.MethodGet, to.String(), nil, nil), nil), person("bruno", mfa), nil)
	if back.url.Path != "/approvals/"+a.ID || back.resp.StatusCode != http.StatusOK {
		t.Fatalf("after the step-up: %s %d, want the page", back.url, back.resp.StatusCode)
	}
	if done := b.decide(t, back, "approve"); done.resp.StatusCode != http.StatusSeeOther || e.state(t, a.ID) != approval.Approved {
		t.Errorf("approve after the step-up: %d, %s:\n%s", done.resp.StatusCode, e.state(t, a.ID), done.body)
	}

	// auth_time too old: sent to sign in with max_age and prompt=login; a sign-in the issuer
	// dates too long ago is refused; a fresh one passes.
	o := e.ask(t, tool)
	b = e.browser(t)
	p = b.open(t, "/approvals/"+o.ID, person("bruno", mfa))
	e.clock.Advance(301 * time.Second)
	to = stepUpTo(t, b.decide(t, p, "approve"), o.ID)
	e.clock.skew.Store(int64(-time.Hour)) // the issuer says the person signed in an hour ago
	refused(t, "a step-up sign-in dated too long ago", b.signIn(t, b.follow(t, b.do(t, http.MethodGet, to.String(), nil, nil), nil), person("bruno", mfa), nil),
		http.StatusForbidden, "insufficient_user_authentication")
	e.clock.skew.Store(0)
	back = b.signIn(t, b.follow(t, b.do(t, http.MethodGet, to.String(), nil, nil), nil), person("bruno", mfa), nil)
	if done := b.decide(t, back, "approve"); done.resp.StatusCode != http.StatusSeeOther || e.state(t, o.ID) != approval.Approved {
		t.Errorf("approve after the step-up: %d, %s:\n%s", done.resp.StatusCode, e.state(t, o.ID), done.body)
	}
}

// futureAuthTime: an issuer whose auth_time is ahead of this server's clock (by more than the
// leeway) does not make a sign-in count as recent for as long as it is ahead: the decision
// asks for a step-up, and a step-up dated in the future is refused.
func futureAuthTime(t *testing.T, e *env) {
	a := e.ask(t, tool)
	b := e.browser(t)
	e.clock.skew.Store(int64(time.Hour)) // the issuer says the person signed in an hour from now
	defer e.clock.skew.Store(0)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	e.clock.Advance(10 * time.Minute) // a sign-in of ten minutes ago is too old for max_age=300
	to := stepUpTo(t, b.decide(t, p, "approve"), a.ID)
	if s := e.state(t, a.ID); s != approval.Pending {
		t.Fatalf("a session whose auth_time is in the future decided: the approval is %s", s)
	}
	refused(t, "a step-up sign-in dated in the future", b.signIn(t, b.follow(t, b.do(t, http.MethodGet, to.String(), nil, nil), nil), person("bruno", mfa), nil),
		http.StatusForbidden, "insufficient_user_authentication")
}

func idle(t *testing.T, e *env) {
	a := e.ask(t, tool)
	b := e.browser(t)
	b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	e.clock.Advance(29 * time.Minute)
	if p := b.do(t, http.MethodGet, "/approvals/"+a.ID, nil, nil); p.resp.StatusCode != http.StatusOK {
		t.Fatalf("a session used 29 minutes ago: %d, want the page", p.resp.StatusCode)
	}
	e.clock.Advance(30 * time.Minute)
	if p := b.do(t, http.MethodGet, "/approvals/"+a.ID, nil, nil); p.resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(p.location(), signin.SignInPath) {
		t.Errorf("a session idle 30 minutes: %d to %q, want sent to sign in", p.resp.StatusCode, p.location())
	}
}

// TestHTTPS: over https the cookies are Secure and __Host- prefixed, and sign-in works the
// same.
func TestHTTPS(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), true)
	a := e.ask(t, tool)
	b := e.browser(t)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, "bruno") {
		t.Fatalf("sign-in over https: %d:\n%s", p.resp.StatusCode, p.body)
	}
	for _, name := range []string{"__Host-cobranca_signin", "__Host-cobranca_session"} {
		c := b.setCookie(name)
		for _, want := range []string{"Path=/", "HttpOnly", "Secure", "SameSite=Lax"} {
			if !strings.Contains(c, want) {
				t.Errorf("%s cookie %q lacks %s", name, c, want)
			}
		}
		if strings.Contains(c, "Domain=") {
			t.Errorf("%s cookie %q names a domain: a __Host- cookie must not", name, c)
		}
	}
	if done := b.decide(t, p, "approve"); done.resp.StatusCode != http.StatusSeeOther || e.state(t, a.ID) != approval.Approved {
		t.Errorf("approve over https: %d %s", done.resp.StatusCode, e.state(t, a.ID))
	}
}

// TestIssuerDown: the pages start without reaching the issuer; while it is down, sign-in says
// so (503 unavailable) and tries again two seconds later, and then works.
func TestIssuerDown(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), false)
	e.issuerDown.Store(true)
	a := e.ask(t, tool)
	b := e.browser(t)
	refused(t, "sign-in while the issuer is down", b.get(t, "/approvals/"+a.ID), http.StatusServiceUnavailable, "unavailable")
	e.issuerDown.Store(false)
	refused(t, "sign-in at once after", b.get(t, "/approvals/"+a.ID), http.StatusServiceUnavailable, "unavailable")
	e.clock.Advance(2 * time.Second)
	if p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa)); p.resp.StatusCode != http.StatusOK {
		t.Errorf("sign-in once the issuer is back: %d:\n%s", p.resp.StatusCode, p.body)
	}
}

// ledgerNow: the page shows what the ledger says of the call's invoices each time it is shown
// (not what it said when the call was asked for), as text, to those who see the preview; an
// agent sees none of it.
func ledgerNow(t *testing.T, e *env) {
	defer e.ledger.Store(nil)
	a := e.ask(t, tool)
	b := e.browser(t)
	open := `- "NF-1" due 2026-11-01, R$ 1.234,56 — ledger: open, R$ 1.234,56 open <b>`
	e.ledger.Store(&open)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	if !strings.Contains(p.body, "The invoices in the receivables ledger, as of now") || !strings.Contains(p.body, `ledger: open, R$ 1.234,56 open &lt;b&gt;`) {
		t.Fatalf("the page lacks the ledger's state, as text:\n%s", p.body)
	}
	paid := `- "NF-1" due 2026-11-01, R$ 1.234,56 — ledger: paid, R$ 0,00 open — paid`
	e.ledger.Store(&paid)
	if p := b.get(t, "/approvals/"+a.ID); !strings.Contains(p.body, "ledger: paid, R$ 0,00 open — paid") || strings.Contains(p.body, "ledger: open") {
		t.Errorf("shown again after a payment, the page does not say paid:\n%s", p.body)
	}
	bot := e.browser(t)
	if bp := bot.open(t, "/approvals/"+a.ID, agent("carla")); strings.Contains(bp.body, "NF-1") || strings.Contains(bp.body, `id="ledger"`) {
		t.Errorf("an agent's page shows the ledger:\n%s", bp.body)
	}
}

// BACEN's example BR Code (Manual de Padrões para Iniciação do Pix), and the same with its
// CRC broken: the page draws a QR for the first only.
const (
	pixCode   = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"
	pixBroken = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3E"
)

func pixQR(t *testing.T, e *env) {
	preview := "Send draft d_x by e-mail.\nPIX copia-e-cola: " + pixCode + "\nNot a code: " + pixBroken + "\n| " + pixCode + "\n"
	a, err := e.approvals.Create(context.Background(), e.db, tool, sha256.Sum256([]byte(t.Name())), preview,
		[]string{"sends one e-mail to the customer"}, approval.Requester{Subject: "ana", Client: "collector-bot", Actor: "collector-bot"})
	if err != nil {
		t.Fatal(err)
	}
	p := e.browser(t).open(t, "/approvals/"+a.ID, person("bruno", mfa))
	if n := strings.Count(p.body, `<figure class="qr"><svg`); n != 1 || !strings.Contains(p.body, "The PIX QR code the message carries") {
		t.Fatalf("the page draws %d QR codes, want 1 (the valid code, once, not the broken one):\n%s", n, p.body)
	}
	if strings.Contains(p.body, "<script") {
		t.Errorf("the page carries a script:\n%s", p.body)
	}
	if bp := e.browser(t).open(t, "/approvals/"+a.ID, agent("carla")); strings.Contains(bp.body, "<svg") {
		t.Errorf("an agent's page draws the code:\n%s", bp.body)
	}
}
