package files

import (
	"mime"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/value"
)

// FuzzParseExpiry: any string is either refused as invalid_arguments
// naming expiresAt, or read as a whole-second instant after now and at
// most MaxLinkLifetime ahead, in UTC.
func FuzzParseExpiry(f *testing.F) {
	now := time.Date(2025, 12, 24, 9, 30, 0, 0, time.UTC)
	for _, s := range []string{"2025-12-31T23:59:00Z", "2025-12-31T20:59:00-03:00", "2025-12-25T09:30:00.000Z",
		"2025-12-25T09:30:00.5Z", "2025-02-30T00:00:00Z", "2025-12-24T09:30:00Z", "+2025-12-25T00:00:00Z", "2025-12-25t00:00:00z",
		"2025-12-26T09:30:00+24:00", "2025-12-26T09:30:00+23:60", "2025-12-25T09:30:00-00:60", "2025-12-25T10:00:00+23:59"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseExpiry("expiresAt", s, now)
		if err != nil {
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != "expiresAt" {
				t.Fatalf("parseExpiry(%q) = %v, want invalid_arguments on expiresAt", s, err)
			}
			return
		}
		if !got.After(now) || got.Sub(now) > MaxLinkLifetime || got.Nanosecond() != 0 || got.Location() != time.UTC {
			t.Fatalf("parseExpiry(%q) = %v, out of bounds", s, got)
		}
		// RFC 3339's offsets: Z, or ±HH:MM with HH 00–23 and MM 00–59.
		if z := s[len(s)-1]; z != 'Z' {
			hh, mm := s[len(s)-5:len(s)-3], s[len(s)-2:]
			if hh > "23" || mm > "59" || s[len(s)-6] != '+' && s[len(s)-6] != '-' {
				t.Fatalf("parseExpiry(%q) = %v: took an offset RFC 3339 forbids", s, got)
			}
		}
	})
}

// FuzzDisposition: for every name the rule of names accepts, the header is
// one a reader parses back to that very name (RFC 2231/8187 filename*),
// and it holds no control character.
func FuzzDisposition(f *testing.F) {
	for _, s := range []string{"boleto.pdf", "Boleto março.pdf", `a"b\c;d.pdf`, "<script>.pdf", "ﬁ 文件 😀.pdf", "a%20b", "x'y'z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if value.TextProblem(name) != "" {
			return
		}
		h := Disposition(name)
		for i := 0; i < len(h); i++ {
			if h[i] < 0x20 || h[i] >= 0x7f {
				t.Fatalf("Disposition(%q) = %q holds byte %#x", name, h, h[i])
			}
		}
		kind, params, err := mime.ParseMediaType(h)
		if err != nil || kind != "attachment" || params["filename"] != name {
			t.Fatalf("Disposition(%q) = %s, parsed back as %q %q (%v)", name, h, kind, params["filename"], err)
		}
	})
}
