package signin

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

// TestSessions: on both stores, as the serving role: a session reads back as created, is
// found only by its cookie value (the table holds its hash), ends after its idle time without
// use, lasts while used, ends at its absolute expiry, and at sign-out.
func TestSessions(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		c := &clocktest.Clock{}
		s := sessions{db: db, now: c.Now}
		pr := &auth.Principal{Subject: "bruno", ClientID: "cobranca-web", ACR: "urn:mfa", Roles: []string{"collections.approver", "ops"}, AuthTime: c.Now().Add(-time.Minute).Truncate(time.Microsecond), Kind: auth.KindHuman}
		cookie, created, err := s.create(ctx, pr, 8*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.get(ctx, cookie, 30*time.Minute)
		if err != nil || got == nil {
			t.Fatalf("get = %v, %v; want the session", got, err)
		}
		if diff := cmp.Diff(pr, got.Principal); diff != "" {
			t.Errorf("principal (-want +got):\n%s", diff)
		}
		if got.CSRF != created.CSRF || len(got.CSRF) < 43 {
			t.Errorf("CSRF %q, want the session's own random token %q", got.CSRF, created.CSRF)
		}
		var stored []byte
		if err := db.QueryRow(ctx, `SELECT id_hash FROM web_session`).Scan(&stored); err != nil || bytes.Contains(stored, []byte(cookie)) || !bytes.Equal(stored, idHash(cookie)) {
			t.Errorf("stored id %x, %v: want the SHA-256 of the cookie value, never the value", stored, err)
		}
		if other, err := s.get(ctx, secret(), 30*time.Minute); other != nil || err != nil {
			t.Errorf("another cookie value finds %v, %v; want nothing", other, err)
		}

		// Used every 20 minutes, it outlives the idle time.
		for range 3 {
			c.Advance(20 * time.Minute)
			if got, err := s.get(ctx, cookie, 30*time.Minute); got == nil || err != nil {
				t.Fatalf("a session used every 20 minutes ended: %v, %v", got, err)
			}
		}
		// Left alone 30 minutes, it ends, and its row is gone.
		c.Advance(30 * time.Minute)
		if got, err := s.get(ctx, cookie, 30*time.Minute); got != nil || err != nil {
			t.Errorf("an idle session = %v, %v; want ended", got, err)
		}
		if n := storetest.Count(t, db, "web_session"); n != 0 {
			t.Errorf("%d session rows after the idle end, want 0", n)
		}

		// The absolute expiry ends a session in use.
		cookie, _, err = s.create(ctx, pr, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			c.Advance(29 * time.Minute)
			if got, _ := s.get(ctx, cookie, 30*time.Minute); got == nil {
				t.Fatal("a session in use ended before its expiry")
			}
		}
		c.Advance(2 * time.Minute)
		if got, err := s.get(ctx, cookie, 30*time.Minute); got != nil || err != nil {
			t.Errorf("a session past its absolute expiry = %v, %v; want ended", got, err)
		}

		// Sign-out deletes it.
		cookie, _, err = s.create(ctx, pr, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.delete(ctx, cookie); err != nil {
			t.Fatal(err)
		}
		if got, err := s.get(ctx, cookie, 30*time.Minute); got != nil || err != nil {
			t.Errorf("a deleted session = %v, %v; want none", got, err)
		}
	})
}

// TestPendingSignins: a pre-session is read back once (the callback uses it up), not after
// its expiry, and the next sign-in deletes what has expired.
func TestPendingSignins(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		c := &clocktest.Clock{}
		s := sessions{db: db, now: c.Now}
		now := c.Now().Truncate(time.Microsecond)
		p := &pending{state: secret(), nonce: secret(), verifier: secret(), returnTo: "/approvals/a_x?lang=pt-BR",
			stepUp: auth.StepUp{ACRValues: []string{"urn:mfa", "urn:hw"}, MaxAge: 300 * time.Second}, created: now, expires: now.Add(signinTTL),
			client: clientHash("192.0.2.1")}
		binding := secret()
		if err := s.startSignin(ctx, binding, p); err != nil {
			t.Fatal(err)
		}
		got, err := s.finishSignin(ctx, binding)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(p, got, cmp.AllowUnexported(pending{})); diff != "" {
			t.Errorf("pre-session (-want +got):\n%s", diff)
		}
		if _, err := s.finishSignin(ctx, binding); err != errNoSignin {
			t.Errorf("a pre-session used a second time: %v, want errNoSignin", err)
		}

		plain := &pending{state: secret(), nonce: secret(), verifier: secret(), returnTo: "/", created: now, expires: now.Add(signinTTL), client: clientHash("192.0.2.1")}
		old := secret()
		if err := s.startSignin(ctx, old, plain); err != nil {
			t.Fatal(err)
		}
		c.Advance(signinTTL)
		if _, err := s.finishSignin(ctx, old); err != errNoSignin {
			t.Errorf("an expired pre-session: %v, want errNoSignin", err)
		}
		if err := s.startSignin(ctx, secret(), plain); err != nil { // its own expiry is in the past: reaped by the next one
			t.Fatal(err)
		}
		if err := s.startSignin(ctx, secret(), &pending{state: "s", nonce: "n", verifier: "v", returnTo: "/", created: c.Now(), expires: c.Now().Add(signinTTL), client: clientHash("192.0.2.1")}); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, db, "web_signin"); n != 1 {
			t.Errorf("%d pre-sessions after a sign-in reaped the expired ones, want 1", n)
		}
	})
}

// TestLocalPath: only a path on this server is a place to go back to after sign-in.
func TestLocalPath(t *testing.T) {
	for _, s := range []string{"/", "/approvals/a_abc", "/approvals/a_abc?lang=pt-BR", "/a/b#frag", "/%2F%2Fevil.example"} {
		if !LocalPath(s) {
			t.Errorf("LocalPath(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "approvals/a", "//evil.example/x", `/\evil.example`, "///evil.example", "https://evil.example/",
		"javascript:alert(1)", "/\x00x", "/a\nb", "/a\tb", `/a\b`, "http:/evil", "/" + strings.Repeat("a", 2048)} {
		if LocalPath(s) {
			t.Errorf("LocalPath(%q) = true, want false", s)
		}
	}
}

// FuzzLocalPath: whatever LocalPath accepts, resolved against this server's URL as a browser
// would, stays on this server.
func FuzzLocalPath(f *testing.F) {
	for _, s := range []string{"/", "/approvals/a_x?lang=en", "//evil", `/\evil`, "/.//evil", "/%09/evil", "https://x/"} {
		f.Add(s)
	}
	base, _ := url.Parse("https://cobranca.example.com/base/")
	f.Fuzz(func(t *testing.T, s string) {
		if !LocalPath(s) {
			return
		}
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("LocalPath(%q) accepted what url.Parse refuses: %v", s, err)
		}
		if r := base.ResolveReference(u); r.Host != base.Host || r.Scheme != base.Scheme {
			t.Errorf("LocalPath(%q) accepted a path that leads to %s", s, r)
		}
	})
}

// TestPendingSigninBounds: anyone may start a sign-in, so the pre-sessions are bounded: one
// client holds at most maxPerClient live ones, the store at most maxSignins; expired ones no
// longer count, and a refusal stores nothing.
func TestPendingSigninBounds(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		c := &clocktest.Clock{}
		s := sessions{db: db, now: c.Now, maxSignins: 5, maxPerClient: 3}
		start := func(client string) error {
			now := c.Now()
			return s.startSignin(ctx, secret(), &pending{state: secret(), nonce: secret(), verifier: secret(), returnTo: "/",
				client: clientHash(client), created: now, expires: now.Add(signinTTL)})
		}
		for i := range 3 {
			if err := start("192.0.2.1"); err != nil {
				t.Fatalf("sign-in %d of a client: %v", i+1, err)
			}
		}
		if err := start("192.0.2.1"); !errors.Is(err, errClientSignins) {
			t.Errorf("a client's fourth sign-in in progress: %v, want errClientSignins", err)
		}
		if err := start("192.0.2.2"); err != nil {
			t.Errorf("another client's first sign-in: %v", err)
		}
		if err := start("192.0.2.3"); err != nil {
			t.Errorf("a third client's first sign-in: %v", err)
		}
		if err := start("192.0.2.4"); !errors.Is(err, errSigninsFull) {
			t.Errorf("a sign-in past the store's bound: %v, want errSigninsFull", err)
		}
		if n := storetest.Count(t, db, "web_signin"); n != 5 {
			t.Errorf("%d pre-sessions, want 5 (refusals store nothing)", n)
		}
		c.Advance(signinTTL)
		if err := start("192.0.2.1"); err != nil {
			t.Errorf("a sign-in once the others expired: %v", err)
		}
		if n := storetest.Count(t, db, "web_signin"); n != 1 {
			t.Errorf("%d pre-sessions after the expired ones were reaped, want 1", n)
		}
	})
}

// TestSessionsPerSubject: each sign-in is a session row for hours, so one person's are
// bounded: past maxSessionsPerSubject live sessions, a new sign-in ends that person's oldest;
// another person's are left alone.
func TestSessionsPerSubject(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		c := &clocktest.Clock{}
		s := sessions{db: db, now: c.Now}
		pr := func(sub string) *auth.Principal {
			return &auth.Principal{Subject: sub, ClientID: "cobranca-web", Kind: auth.KindHuman}
		}
		other, _, err := s.create(ctx, pr("ana"), 8*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		var cookies []string
		for range maxSessionsPerSubject + 2 {
			c.Advance(time.Second)
			cookie, _, err := s.create(ctx, pr("bruno"), 8*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			cookies = append(cookies, cookie)
		}
		for i, cookie := range cookies {
			got, err := s.get(ctx, cookie, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if live := got != nil; live != (i >= 2) {
				t.Errorf("bruno's session %d of %d live: %v, want only the newest %d", i+1, len(cookies), live, maxSessionsPerSubject)
			}
		}
		if got, err := s.get(ctx, other, time.Hour); got == nil || err != nil {
			t.Errorf("ana's session: %v, %v; want it left alone", got, err)
		}
		if n := storetest.Count(t, db, "web_session"); n != maxSessionsPerSubject+1 {
			t.Errorf("%d session rows, want %d", n, maxSessionsPerSubject+1)
		}
	})
}
