package idempotency_test

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/value"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestValidKey(t *testing.T) {
	tests := []struct {
		key string
		ok  bool
	}{
		{"a", true},
		{"k-2026-07-01-0001", true},
		{"550e8400-e29b-41d4-a716-446655440000", true},
		{"lembrete: João, fatura 17", true}, // spaces inside, accents
		{"請求書-17", true},
		{strings.Repeat("x", 255), true},
		{strings.Repeat("é", 255), true}, // characters, not bytes
		{"", false},
		{" ", false},
		{"   ", false},
		{strings.Repeat("x", 256), false},
		{strings.Repeat("é", 256), false},
		{"a\tb", false},
		{"a\nb", false},
		{"a\x00b", false},
		{"a\x7fb", false},
		{"a\u0085b", false},     // C1 control
		{"a\u200bb", false},     // zero width space
		{"a\u202eb", false},     // right-to-left override
		{"a\u2066b", false},     // left-to-right isolate
		{"a\ufeffb", false},     // BOM
		{"a\U000e0041b", false}, // tag character
		{"a\ufe0fb", false},     // variation selector
		{"\u3164", false},       // Hangul filler alone
		{"a\xffb", false},       // invalid UTF-8
	}
	for _, tt := range tests {
		err := idempotency.ValidKey(tt.key)
		if tt.ok {
			if err != nil {
				t.Errorf("ValidKey(%+q) = %v, want nil", tt.key, err)
			}
			continue
		}
		fe, ok := failure.As(err)
		if !ok || fe.Code != failure.InvalidArguments || fe.Field != "idempotencyKey" || fe.Message == "" {
			t.Errorf("ValidKey(%+q) = %#v, want code %s on idempotencyKey", tt.key, err, failure.InvalidArguments)
			continue
		}
		if len(tt.key) > 2 && strings.Contains(fe.Text(), tt.key) {
			t.Errorf("ValidKey(%+q): the message %q holds the key", tt.key, fe.Text())
		}
	}
}

// FuzzValidKey: ValidKey never panics, its verdict is a failure with the stable code, and a
// key it accepts is 1 to 255 characters of valid UTF-8 without control characters.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"a", "k-1", "", " ", "a\u200bb", strings.Repeat("x", 256), "a\xffb", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		err := idempotency.ValidKey(k)
		if err != nil {
			if fe, ok := failure.As(err); !ok || fe.Code != failure.InvalidArguments || fe.Field != contract.ArgIdempotencyKey {
				t.Fatalf("ValidKey(%+q) = %#v", k, err)
			}
			return
		}
		if n := utf8.RuneCountInString(k); !utf8.ValidString(k) || n < 1 || n > 255 {
			t.Fatalf("ValidKey(%+q) accepted %d characters (valid UTF-8: %v)", k, n, utf8.ValidString(k))
		}
		if strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }) {
			t.Fatalf("ValidKey(%+q) accepted a control character", k)
		}
		if strings.TrimSpace(k) == "" {
			t.Fatalf("ValidKey(%+q) accepted a blank key", k)
		}
	})
}

// TestKeyLengthAgrees: the length the contract publishes for a key
// (schema, messages) is the one ValidKey checks, through the shared text rule.
func TestKeyLengthAgrees(t *testing.T) {
	if contract.MaxIdempotencyKeyLen != value.MaxTextLen || !strings.Contains(contract.IdempotencyKeyRule, strconv.Itoa(value.MaxTextLen)) {
		t.Fatalf("contract says %d (%q), ValidKey checks %d", contract.MaxIdempotencyKeyLen, contract.IdempotencyKeyRule, value.MaxTextLen)
	}
	if idempotency.ValidKey(strings.Repeat("k", contract.MaxIdempotencyKeyLen)) != nil || idempotency.ValidKey(strings.Repeat("k", contract.MaxIdempotencyKeyLen+1)) == nil {
		t.Error("ValidKey does not hold keys to contract.MaxIdempotencyKeyLen")
	}
}
