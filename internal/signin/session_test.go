package signin

import (
	"bytes"
	"context"
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

		// An expired session nobody reads again goes with the next sign-in.
		if _, _, err := s.create(ctx, pr, time.Hour); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Hour)
		if _, _, err := s.create(ctx, &auth.Principal{Subject: "ana", Kind: auth.KindHuman}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if n := storetest.Count(t, db, "web_session"); n != 1 {
			t.Errorf("%d session rows after a sign-in, want 1: the expired one deleted", n)
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
