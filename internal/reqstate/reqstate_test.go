package reqstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	t0      = time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	secretA = bytes.Repeat([]byte{0xA1}, 32)
	secretB = bytes.Repeat([]byte{0xB2}, 48)
	bind    = Binding{Principal: "user:alice", Tool: "collections.send_reminder", ArgsDigest: "sha256:0f1e"}
)

func mustRing(t testing.TB, current Key, older ...Key) *Ring {
	t.Helper()
	r, err := NewRing(current, older...)
	if err != nil {
		t.Fatalf("NewRing: %v", err)
	}
	return r
}

func mustSeal(t testing.TB, r *Ring, b Binding, payload []byte, exp time.Time) string {
	t.Helper()
	s, err := r.Seal(b, payload, exp)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return s
}

var cmpOpened = cmp.Options{cmpopts.EquateEmpty(), cmpopts.IgnoreFields(Opened{}, "Nonce")}

func TestRoundTrip(t *testing.T) {
	r := mustRing(t, Key{"k2", secretB}, Key{"k1", secretA})
	for _, tc := range []struct {
		name    string
		payload []byte
		exp     time.Time
	}{
		{"empty payload", nil, t0.Add(time.Minute)},
		{"digest payload", []byte("sha256:preview-digest"), t0.Add(5 * time.Minute)},
		{"max payload", bytes.Repeat([]byte{0xFF}, MaxPayload), t0.Add(time.Hour)},
		{"sub-second expiry truncated", []byte{1}, t0.Add(90*time.Second + 700*time.Millisecond)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSeal(t, r, bind, tc.payload, tc.exp)
			if len(s) > MaxStateLen {
				t.Errorf("len(state) = %d > MaxStateLen %d", len(s), MaxStateLen)
			}
			if strings.ContainsAny(s, "+/=") {
				t.Errorf("state %q is not URL-safe unpadded base64", s)
			}
			got, err := r.Open(s, bind, t0)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			want := Opened{KeyID: "k2", Expires: tc.exp.Truncate(time.Second), Payload: tc.payload}
			if d := cmp.Diff(want, got, cmpOpened); d != "" {
				t.Errorf("Open(Seal) (-want +got):\n%s", d)
			}
		})
	}
}

func TestNoncesAreFresh(t *testing.T) {
	r := mustRing(t, Key{"k1", secretA})
	seen := map[Nonce]bool{}
	for range 100 {
		o, err := r.Open(mustSeal(t, r, bind, nil, t0.Add(time.Minute)), bind, t0)
		if err != nil {
			t.Fatal(err)
		}
		if seen[o.Nonce] || o.Nonce == (Nonce{}) {
			t.Fatalf("nonce %s repeated or zero", o.Nonce)
		}
		seen[o.Nonce] = true
	}
	if s := (Nonce{0xAB}).String(); s != "ab000000000000000000000000000000" {
		t.Errorf("Nonce.String = %q", s)
	}
}

// reseal builds a state like Seal does, with chosen fields, MAC'd under key:
// the tests use it to forge states whose only defect is the one under test.
func reseal(version byte, id string, exp uint64, b Binding, payload []byte, key []byte) string {
	buf := []byte{version, byte(len(id))}
	buf = append(buf, id...)
	buf = append(buf, make([]byte, NonceLen)...)
	buf = binary.BigEndian.AppendUint64(buf, exp)
	d := b.digest()
	buf = append(buf, d[:]...)
	buf = append(buf, byte(len(payload)))
	buf = append(buf, payload...)
	return enc.EncodeToString(appendMAC(buf, key, buf))
}

func TestOpenRefusals(t *testing.T) {
	r := mustRing(t, Key{"k1", secretA})
	exp := t0.Add(time.Minute)
	good := mustSeal(t, r, bind, []byte("p"), exp)
	raw, _ := enc.DecodeString(good)
	flipMAC := bytes.Clone(raw)
	flipMAC[len(flipMAC)-1] ^= 1
	flipPayload := bytes.Clone(raw)
	flipPayload[len(flipPayload)-macLen-1] ^= 1
	unixExp := uint64(exp.Unix())
	// good's last character carries unused bits (len(raw)%3 != 0): the next
	// letter of the alphabet sets one and decodes, loosely, to the same bytes.
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(raw)%3 == 0 {
		t.Fatalf("len(raw) = %d: choose a payload that leaves unused bits", len(raw))
	}
	otherSpelling := good[:len(good)-1] + string(alphabet[strings.IndexByte(alphabet, good[len(good)-1])+1])
	for _, tc := range []struct {
		name  string
		state string
		b     Binding
		now   time.Time
		want  error
	}{
		{"empty", "", bind, t0, ErrMalformed},
		{"not base64", strings.Repeat("!", len(good)), bind, t0, ErrMalformed},
		{"same bytes, other spelling", otherSpelling, bind, t0, ErrMalformed},
		{"padded base64", good + "==", bind, t0, ErrMalformed},
		{"too long", good + strings.Repeat("A", MaxStateLen), bind, t0, ErrMalformed},
		{"truncated", good[:len(good)-4], bind, t0, ErrMalformed},
		{"extra bytes", enc.EncodeToString(append(bytes.Clone(raw), 0)), bind, t0, ErrMalformed},
		{"other version", reseal(2, "k1", unixExp, bind, nil, secretA), bind, t0, ErrMalformed},
		{"empty key id", reseal(1, "", unixExp, bind, nil, secretA), bind, t0, ErrMalformed},
		{"unknown key id", reseal(1, "k9", unixExp, bind, nil, secretA), bind, t0, ErrUnknownKey},
		{"MAC flipped", enc.EncodeToString(flipMAC), bind, t0, ErrForged},
		{"payload flipped", enc.EncodeToString(flipPayload), bind, t0, ErrForged},
		{"sealed under another key with this id", reseal(1, "k1", unixExp, bind, nil, secretB), bind, t0, ErrForged},
		{"expired", good, bind, exp.Add(Leeway), ErrExpired},
		{"long expired", good, bind, exp.Add(time.Hour), ErrExpired},
		{"other caller", good, Binding{"user:bob", bind.Tool, bind.ArgsDigest}, t0, ErrOtherBinding},
		{"other tool", good, Binding{bind.Principal, "collections.send_reminders", bind.ArgsDigest}, t0, ErrOtherBinding},
		{"other arguments", good, Binding{bind.Principal, bind.Tool, "sha256:0f1f"}, t0, ErrOtherBinding},
		{"fields shifted", good, Binding{"user:alicecollections.send_reminder", "", bind.ArgsDigest}, t0, ErrOtherBinding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := r.Open(tc.state, tc.b, tc.now)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open = %v, want %v", err, tc.want)
			}
			if d := cmp.Diff(Opened{}, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("refused Open returned data (-want +got):\n%s", d)
			}
			if strings.Contains(err.Error(), tc.state) && tc.state != "" {
				t.Errorf("error %q repeats the state", err)
			}
		})
	}
}

func TestLeeway(t *testing.T) {
	r := mustRing(t, Key{"k1", secretA})
	exp := t0.Add(time.Minute)
	s := mustSeal(t, r, bind, nil, exp)
	if _, err := r.Open(s, bind, exp.Add(Leeway-time.Nanosecond)); err != nil {
		t.Errorf("Open within leeway: %v", err)
	}
	if _, err := r.Open(s, bind, exp.Add(Leeway)); !errors.Is(err, ErrExpired) {
		t.Errorf("Open at expiry+leeway = %v, want expired", err)
	}
}

func TestErrorCodes(t *testing.T) {
	for _, tc := range []struct {
		err  *Error
		code Code
	}{
		{ErrMalformed, "request_state_malformed"},
		{ErrUnknownKey, "request_state_unknown_key"},
		{ErrForged, "request_state_forged"},
		{ErrExpired, "request_state_expired"},
		{ErrOtherBinding, "request_state_other_binding"},
	} {
		if tc.err.Code != tc.code || !strings.HasPrefix(tc.err.Error(), string(tc.code)+": ") {
			t.Errorf("%v: code %q, want %q", tc.err, tc.err.Code, tc.code)
		}
	}
	if errors.Is(ErrForged, ErrExpired) {
		t.Error("distinct codes match")
	}
	if !errors.Is(fmt.Errorf("confirm: %w", &Error{Code: Expired}), ErrExpired) {
		t.Error("a wrapped *Error with the same code does not match")
	}
}

func TestSealRejectsInvalidInput(t *testing.T) {
	r := mustRing(t, Key{"k1", secretA})
	for _, tc := range []struct {
		name    string
		b       Binding
		payload []byte
		exp     time.Time
		field   string
	}{
		{"no principal", Binding{"", "t", "d"}, nil, t0, "binding.principal"},
		{"no tool", Binding{"p", "", "d"}, nil, t0, "binding.tool"},
		{"no args digest", Binding{"p", "t", ""}, nil, t0, "binding.argsDigest"},
		{"payload too long", bind, make([]byte, MaxPayload+1), t0, "payload"},
		{"zero expiry", bind, nil, time.Time{}, "expires"},
		{"expiry before 1970", bind, nil, time.Unix(-5, 0), "expires"},
		{"expiry too far", bind, nil, time.Unix(maxExpires+1, 0), "expires"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.Seal(tc.b, tc.payload, tc.exp)
			var e *Error
			if !errors.As(err, &e) || e.Code != InvalidInput || e.Field != tc.field || s != "" {
				t.Fatalf("Seal = %q, %v; want %s on %s", s, err, InvalidInput, tc.field)
			}
		})
	}
}

func TestNewRingValidates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		current Key
		older   []Key
		field   string
	}{
		{"short current", Key{"k1", secretA[:31]}, nil, "keys[0].secret"},
		{"short older", Key{"k1", secretA}, []Key{{"k0", secretB[:10]}}, "keys[1].secret"},
		{"duplicate id", Key{"k1", secretA}, []Key{{"k1", secretB}}, "keys[1].id"},
		{"empty id", Key{"", secretA}, nil, "keys[0].id"},
		{"long id", Key{strings.Repeat("k", MaxKeyIDLen+1), secretA}, nil, "keys[0].id"},
		{"id with space", Key{"k 1", secretA}, nil, "keys[0].id"},
		{"too many keys", Key{"k", secretA}, make([]Key, MaxKeys), "keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRing(tc.current, tc.older...)
			var e *Error
			if !errors.As(err, &e) || e.Code != InvalidKey || e.Field != tc.field || r != nil {
				t.Fatalf("NewRing = %v, %v; want %s on %s", r, err, InvalidKey, tc.field)
			}
			for _, k := range append([]Key{tc.current}, tc.older...) {
				if len(k.Secret) > 0 && strings.Contains(err.Error(), string(k.Secret)) {
					t.Errorf("error %q carries key material", err)
				}
			}
		})
	}
}

// The ring copies the keys: changing the caller's slice afterwards changes
// nothing.
func TestNewRingCopiesSecrets(t *testing.T) {
	secret := bytes.Clone(secretA)
	r := mustRing(t, Key{"k1", secret})
	s := mustSeal(t, r, bind, nil, t0.Add(time.Minute))
	secret[0] ^= 1
	if _, err := r.Open(s, bind, t0); err != nil {
		t.Errorf("Open after the caller changed its slice: %v", err)
	}
}

func TestKeyMaterialNeverPrinted(t *testing.T) {
	secret := []byte("0123456789abcdefghijklmnopqrstuvwxyz-SECRET")
	k := Key{"k1", secret}
	r := mustRing(t, k, Key{"k0", secretB})
	var logged bytes.Buffer
	l := slog.New(slog.NewTextHandler(&logged, nil))
	l.Info("ring", "ring", r, "key", k)
	l.Info("ring", "ring", *r, "key", &k)
	texts := []string{
		logged.String(), r.String(), k.String(),
		fmt.Sprint(k), fmt.Sprintf("%v %+v %#v %s", k, k, k, k),
		fmt.Sprintf("%v %s %+v %#v %+v", r, r, *r, *r, []any{*r, k}),
	}
	for _, text := range texts {
		for _, s := range [][]byte{secret, secretB} {
			for _, form := range []string{string(s), fmt.Sprintf("%x", s), fmt.Sprint(s), fmt.Sprintf("%d", s[:4])} {
				if strings.Contains(text, form) {
					t.Errorf("%q carries key material (%q)", text, form)
				}
			}
		}
	}
	if !strings.Contains(logged.String(), "k1") || !strings.Contains(r.String(), "current=k1") {
		t.Errorf("the key ids are not named: %q, %q", logged.String(), r.String())
	}
}

func TestRotation(t *testing.T) {
	old := Key{"2026-11", secretA}
	cur := Key{"2026-12", secretB}
	before := mustRing(t, old)
	sOld := mustSeal(t, before, bind, []byte("x"), t0.Add(time.Minute))

	during := mustRing(t, cur, old)
	got, err := during.Open(sOld, bind, t0)
	if err != nil {
		t.Fatalf("state sealed under the old key, old key still in the ring: %v", err)
	}
	if got.KeyID != old.ID {
		t.Errorf("KeyID = %q, want %q", got.KeyID, old.ID)
	}
	sNew := mustSeal(t, during, bind, nil, t0.Add(time.Minute))
	got, err = during.Open(sNew, bind, t0)
	if err != nil || got.KeyID != cur.ID {
		t.Fatalf("new seal: KeyID %q, %v; want sealed under the current key %q", got.KeyID, err, cur.ID)
	}
	if _, err := before.Open(sNew, bind, t0); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("a replica on the old ring opened a state of the new key: %v, want unknown key", err)
	}

	after := mustRing(t, cur)
	if _, err := after.Open(sOld, bind, t0); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("old key removed: Open = %v, want unknown key", err)
	}
	if _, err := after.Open(sNew, bind, t0); err != nil {
		t.Errorf("current key: %v", err)
	}
}

// Another replica, with its own Ring built from the same keys, opens the state.
func TestAnyReplicaOpens(t *testing.T) {
	s := mustSeal(t, mustRing(t, Key{"k1", secretA}), bind, []byte("p"), t0.Add(time.Minute))
	got, err := mustRing(t, Key{"k1", bytes.Clone(secretA)}).Open(s, bind, t0)
	if err != nil || string(got.Payload) != "p" {
		t.Fatalf("other replica: %+v, %v", got, err)
	}
}

func BenchmarkSeal(b *testing.B) {
	r := mustRing(b, Key{"k1", secretA})
	payload := bytes.Repeat([]byte{7}, 32)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Seal(bind, payload, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpen(b *testing.B) {
	r := mustRing(b, Key{"k1", secretA})
	s := mustSeal(b, r, bind, bytes.Repeat([]byte{7}, 32), t0.Add(time.Minute))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Open(s, bind, t0); err != nil {
			b.Fatal(err)
		}
	}
}

// Every single character of a valid state, changed to any other character of
// the alphabet (or to one outside it), makes the state refused: the
// deterministic core of FuzzOpen's property, run by every `go test`.
func TestEverySingleChangeRefused(t *testing.T) {
	r := mustRing(t, Key{"k1", secretA})
	s := mustSeal(t, r, bind, []byte("sha256:preview"), t0.Add(time.Minute))
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_="
	for i := range len(s) {
		for _, c := range []byte(alphabet) {
			if c == s[i] {
				continue
			}
			changed := s[:i] + string(c) + s[i+1:]
			if o, err := r.Open(changed, bind, t0); err == nil {
				t.Fatalf("position %d changed to %q: opened %+v", i, c, o)
			}
		}
	}
}

// A Ring is shared by every request of a replica: run with -race.
func TestConcurrentUse(t *testing.T) {
	r := mustRing(t, Key{"k2", secretB}, Key{"k1", secretA})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			b := Binding{fmt.Sprintf("user:%d", g), bind.Tool, bind.ArgsDigest}
			for range 50 {
				s := mustSeal(t, r, b, []byte{byte(g)}, t0.Add(time.Minute))
				if o, err := r.Open(s, b, t0); err != nil || o.Payload[0] != byte(g) {
					t.Errorf("goroutine %d: %+v, %v", g, o, err)
					return
				}
			}
		})
	}
	wg.Wait()
}
