package reqstate

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// FuzzOpen: Open never panics and, past a malformed state, refuses what it
// was not given by Seal; Open(Seal(x)) gives x back; and a single byte changed
// anywhere in a valid state is refused.
func FuzzOpen(f *testing.F) {
	r := mustRing(f, Key{"k2", secretB}, Key{"k1", secretA})
	f.Add("", "user:alice", "t", "d", []byte("p"), int64(60), 0, byte(1))
	f.Add("AQJrMQ", "p", "collections.x", "sha256:00", []byte{}, int64(1), 5, byte(0x80))
	f.Add(mustSeal(f, r, bind, []byte("p"), t0.Add(time.Minute)), "user:bob", bind.Tool, bind.ArgsDigest, []byte("payload"), int64(300), 17, byte('A'))
	f.Fuzz(func(t *testing.T, state, principal, tool, args string, payload []byte, ttl int64, pos int, sub byte) {
		b := Binding{principal, tool, args}
		// Any input: no panic; a refusal is one of Open's errors.
		if o, err := r.Open(state, b, t0); err == nil {
			// Only a sealed state opens; the fuzzer cannot forge a MAC.
			t.Fatalf("Open accepted a fuzzed state %q: %+v", state, o)
		}
		if b.validate() != nil || len(payload) > MaxPayload || ttl <= 0 || ttl > 1<<30 {
			return
		}
		exp := t0.Add(time.Duration(ttl) * time.Second)
		s, err := r.Seal(b, payload, exp)
		if err != nil {
			t.Fatalf("Seal(valid): %v", err)
		}
		got, err := r.Open(s, b, t0)
		if err != nil {
			t.Fatalf("Open(Seal(x)): %v", err)
		}
		want := Opened{KeyID: "k2", Nonce: got.Nonce, Expires: exp, Payload: payload}
		if d := cmp.Diff(want, got, cmpOpened); d != "" {
			t.Fatalf("Open(Seal(x)) (-want +got):\n%s", d)
		}
		i := uint(pos) % uint(len(s))
		if s[i] == sub {
			return
		}
		changed := []byte(s)
		changed[i] = sub
		if o, err := r.Open(string(changed), b, t0); err == nil {
			t.Fatalf("Open accepted %q, %q with byte %d changed: %+v", s, changed, i, o)
		}
	})
}
