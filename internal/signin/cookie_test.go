package signin

import (
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/reqstate"
)

func testRing(t testing.TB, ids ...string) *reqstate.Ring {
	t.Helper()
	var keys []reqstate.Key
	for _, id := range ids {
		k := reqstate.Key{ID: id, Secret: make([]byte, 32)}
		_, _ = rand.Read(k.Secret)
		keys = append(keys, k)
	}
	r, err := reqstate.NewRing(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestSigninCookie: a sign-in sealed into its cookie opens as it was, once a later key is
// current too; it does not open expired, under another cookie's name, altered in any byte,
// under a ring without its key, nor when it carries nothing of its secrets in the clear.
func TestSigninCookie(t *testing.T) {
	k1 := reqstate.Key{ID: "k1", Secret: []byte(strings.Repeat("a", 32))}
	k2 := reqstate.Key{ID: "k2", Secret: []byte(strings.Repeat("b", 32))}
	old, _ := reqstate.NewRing(k1)
	rotated, _ := reqstate.NewRing(k2, k1)
	only2, _ := reqstate.NewRing(k2)
	now := time.Unix(1_800_000_000, 0)
	p := &pending{state: secret(), nonce: secret(), verifier: secret(), returnTo: "/approvals/a_x?lang=pt-BR",
		stepUp: auth.StepUp{ACRValues: []string{"urn:mfa", "urn:hw"}, MaxAge: 300 * time.Second}, expires: now.Add(signinTTL)}
	const name = "__Host-cobranca_signin"
	v, err := sealPending(old, name, p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{p.state, p.nonce, p.verifier, "approvals", "urn:mfa"} {
		if strings.Contains(v, s) {
			t.Errorf("the cookie shows %q in the clear", s)
		}
	}
	got, err := openPending(rotated, name, v, now.Add(signinTTL-time.Second))
	if err != nil {
		t.Fatalf("open under a rotated ring = %v", err)
	}
	if diff := cmp.Diff(p, got, cmp.AllowUnexported(pending{})); diff != "" {
		t.Errorf("opened sign-in (-want +got):\n%s", diff)
	}
	if again, _ := sealPending(old, name, p); again == v {
		t.Error("the same sign-in sealed twice gives the same cookie: want a fresh salt each time")
	}
	for what, tc := range map[string]struct {
		ring       *reqstate.Ring
		name, v    string
		at         time.Time
		wantOpened bool
	}{
		"expired":            {rotated, name, v, now.Add(signinTTL), false},
		"another name":       {rotated, "cobranca_signin", v, now, false},
		"key no longer held": {only2, name, v, now, false},
		"empty":              {rotated, name, "", now, false},
		"not base64":         {rotated, name, v + "!", now, false},
		"too long":           {rotated, name, v + strings.Repeat("A", maxCookieBytes), now, false},
	} {
		if _, err := openPending(tc.ring, tc.name, tc.v, tc.at); err == nil {
			t.Errorf("%s: opened, want errNoSignin", what)
		}
	}
	raw, _ := cookieEncoding.DecodeString(v)
	for i := range raw {
		for _, bit := range []byte{0x01, 0x80} {
			alt := append([]byte{}, raw...)
			alt[i] ^= bit
			if _, err := openPending(rotated, name, cookieEncoding.EncodeToString(alt), now); err == nil {
				t.Fatalf("byte %d with bit %#x flipped: opened, want refused", i, bit)
			}
		}
	}
	if _, err := openPending(rotated, name, cookieEncoding.EncodeToString(raw[:len(raw)-1]), now); err == nil {
		t.Error("a truncated cookie opened")
	}
	// A return path and acr_values at their bounds do not fit a cookie: refused, not cut.
	long := *p
	long.returnTo, long.stepUp.ACRValues = "/"+strings.Repeat("a", 2047), []string{strings.Repeat("b", 1024)}
	if _, err := sealPending(old, name, &long); err != errCookieTooLong {
		t.Errorf("a sign-in too long for a cookie: %v, want errCookieTooLong", err)
	}
}

// FuzzOpenPending: whatever a browser sends as the sign-in cookie, openPending refuses it
// without panicking unless it was sealed under the ring; a sealed one opens.
func FuzzOpenPending(f *testing.F) {
	ring := testRing(f, "k1")
	now := time.Unix(1_800_000_000, 0)
	good, err := sealPending(ring, "c", &pending{state: "s", nonce: "n", verifier: "v", returnTo: "/", expires: now.Add(time.Minute)})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add("")
	f.Add("AQJrMQ")
	f.Add(good[:len(good)-2])
	f.Fuzz(func(t *testing.T, v string) {
		p, err := openPending(ring, "c", v, now)
		if err == nil && (v != good || p.returnTo != "/") {
			t.Errorf("openPending(%q) opened what was not sealed: %+v", v, p)
		}
	})
}
