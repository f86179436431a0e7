package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// rows counts the rows of every table of the SQLite store.
func rows(t *testing.T, db store.DB) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	rs, err := db.Query(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rs.Next() {
		var name string
		if err := rs.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	rs.Close()
	n := map[string]int64{}
	for _, table := range tables {
		n[table] = storetest.Count(t, db, table)
	}
	return n
}

// TestSigninFlood (issue 25): 20 000 anonymous sign-in starts from 1 000 addresses — no cookie,
// no Origin, as hidden images on a page many people visit would send — store nothing on the
// server, so that afterwards a person still signs in and approves. A pool of sign-ins in
// progress, however bounded, would be full after them, and the person refused.
func TestSigninFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("20 000 sign-ins take seconds: run without -short (CI does)")
	}
	e := newEnv(t, storetest.SQLite(t), false)
	a := e.ask(t, tool)
	before := rows(t, e.db)
	target := signin.SignInPath + "?return=%2Fapprovals%2F" + a.ID
	for i := range 20000 {
		req := httptest.NewRequest(http.MethodGet, target, nil)
		req.RemoteAddr = fmt.Sprintf("198.18.%d.%d:%d", i%1000/250, i%250, 1024+i)
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusFound {
			t.Fatalf("anonymous sign-in start %d = %d, want 302 to the issuer:\n%s", i+1, rec.Code, rec.Body)
		}
	}
	after := rows(t, e.db)
	for table, n := range after {
		if n != before[table] {
			t.Errorf("table %s: %d rows after 20 000 anonymous sign-in starts, %d before: want nothing stored", table, n, before[table])
		}
	}
	b := e.browser(t)
	p := b.open(t, "/approvals/"+a.ID, person("bruno", mfa))
	if p.resp.StatusCode != http.StatusOK {
		t.Fatalf("a person signing in after the flood: %s %d:\n%s", p.url, p.resp.StatusCode, p.body)
	}
	if done := b.decide(t, p, "approve"); done.resp.StatusCode != http.StatusSeeOther || e.state(t, a.ID) != approval.Approved {
		t.Errorf("a person approving after the flood: %d, %s:\n%s", done.resp.StatusCode, e.state(t, a.ID), done.body)
	}
}

// TestSigninFromAnotherSite: /signin refuses a sign-in another site's page starts (Sec-Fetch-Site
// cross-site: hidden images, or a redirect chain that began there), and sets no cookie; a
// person who follows a link to the approval page from another site (a webmail's) is shown the
// sign-in link instead of a redirect their browser would mark cross-site, follows it, signs in
// and approves.
func TestSigninFromAnotherSite(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), false)
	a := e.ask(t, tool)
	b := e.browser(t)
	cross := map[string]string{"Sec-Fetch-Site": "cross-site"}
	link := signin.SignInURL("/approvals/"+a.ID, nil)
	p := b.do(t, http.MethodGet, "/approvals/"+a.ID, nil, cross)
	refused(t, "the page opened signed out from another site's link", p, http.StatusUnauthorized, string(signin.CodeNotSignedIn))
	if !strings.Contains(p.body, `href="`+link+`"`) {
		t.Errorf("the page shows no link to %s:\n%s", link, p.body)
	}
	s := b.do(t, http.MethodGet, link, nil, cross)
	refused(t, "/signin from another site", s, http.StatusForbidden, string(signin.CodeCrossOrigin))
	if c := b.setCookie("cobranca_signin"); c != "" || !strings.Contains(s.body, `href="`+link+`"`) {
		t.Errorf("/signin from another site set cookie %q, and shows the sign-in link: %v", c, strings.Contains(s.body, `href="`+link+`"`))
	}
	at := b.follow(t, b.do(t, http.MethodGet, link, nil, map[string]string{"Sec-Fetch-Site": "same-origin"}), nil)
	p = b.signIn(t, at, person("bruno", mfa), nil)
	if p.resp.StatusCode != http.StatusOK || p.url.Path != "/approvals/"+a.ID {
		t.Fatalf("after signing in from the link: %s %d:\n%s", p.url, p.resp.StatusCode, p.body)
	}
	if done := b.decide(t, p, "approve"); done.resp.StatusCode != http.StatusSeeOther || e.state(t, a.ID) != approval.Approved {
		t.Errorf("approve: %d, %s:\n%s", done.resp.StatusCode, e.state(t, a.ID), done.body)
	}
}
