package auth

import (
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

func TestParseBearer(t *testing.T) {
	tests := []struct {
		header, want string
		ok           bool
	}{
		{"Bearer abc.def.ghi", "abc.def.ghi", true},
		{"bearer abc", "abc", true},
		{"BEARER   a-b_c~d+e/f==", "a-b_c~d+e/f==", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearer =", "", false},
		{"Bearer a b", "", false},
		{"Bearer a=b", "", false},
		{"Bearer\tabc", "", false},
		{"Bearerabc", "", false},
		{"Basic YWxpY2U6c2VjcmV0", "", false},
		{"Bearer abc\x00", "", false},
		{"Bearer ä", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseBearer(tt.header)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzBearer: parsing never panics, and an accepted token is exactly the
// header's credentials: what follows "Bearer" and its spaces, a token68.
func FuzzBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc.def.ghi", "bearer  x==", "Basic abc", "Bearer", "Bearer a b", "BeArEr a/b+c~"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		tok, ok := ParseBearer(header)
		if !ok {
			if tok != "" {
				t.Fatalf("ParseBearer(%q) refused but returned %q", header, tok)
			}
			return
		}
		if !strings.EqualFold(header[:6], "bearer") || header[6] != ' ' {
			t.Fatalf("ParseBearer(%q) accepted another scheme", header)
		}
		if !strings.HasSuffix(header, tok) || strings.Trim(header[6:len(header)-len(tok)], " ") != "" {
			t.Fatalf("ParseBearer(%q) = %q: not exactly the credentials", header, tok)
		}
		if tok == "" || strings.ContainsAny(tok, " \t\r\n,\"") || strings.HasPrefix(tok, "=") {
			t.Fatalf("ParseBearer(%q) = %q: not a token68", header, tok)
		}
		if i := strings.IndexByte(tok, '='); i >= 0 && strings.Trim(tok[i:], "=") != "" {
			t.Fatalf("ParseBearer(%q) = %q: '=' inside the token", header, tok)
		}
	})
}

// BenchmarkVerify measures verification with the key already cached.
func BenchmarkVerify(b *testing.B) {
	k := keysOnce()
	for _, bc := range []struct {
		name   string
		method jwt.SigningMethod
		key    any
		kid    string
	}{
		{"ES256", jwt.SigningMethodES256, k.ec, "ec-1"},
		{"EdDSA", jwt.SigningMethodEdDSA, k.ed, "ed-1"},
		{"RS256", jwt.SigningMethodRS256, k.rsa, "rsa-1"},
	} {
		// cold: a signature check every call (the cache is emptied).
		b.Run(bc.name+"/cold", func(b *testing.B) {
			e := newEnv(b)
			tok := sign(b, bc.method, bc.key, bc.kid, e.claims())
			b.ReportAllocs()
			for b.Loop() {
				e.a.verifier.verified = newVerifiedCache(verifiedCacheSize)
				if _, err := e.a.Verify(b.Context(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
		// cached: the same token again, as an agent's calls present it.
		b.Run(bc.name+"/cached", func(b *testing.B) {
			e := newEnv(b)
			tok := sign(b, bc.method, bc.key, bc.kid, e.claims())
			if _, err := e.a.Verify(b.Context(), tok); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.a.Verify(b.Context(), tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzVerify: arbitrary token strings never panic the verifier and are
// never accepted.
func FuzzVerify(f *testing.F) {
	e := newEnv(f)
	k := keysOnce()
	f.Add(sign(f, jwt.SigningMethodES256, k.ec, "ec-1", e.claims()) + "x")
	f.Add("eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.")
	f.Add("a.b.c")
	f.Fuzz(func(t *testing.T, tok string) {
		if p, err := e.a.Verify(t.Context(), tok); err == nil {
			t.Fatalf("Verify(%q) accepted: %+v", tok, p)
		}
	})
}
