package reqstate

import (
	"errors"
	"testing"
)

// TestTag: a tag verifies under the key that made it, also once that key
// is no longer current; any other message, use, key id or tag is refused;
// a use that is the request state's own is a programming error.
func TestTag(t *testing.T) {
	old := mustRing(t, Key{"k1", secretA})
	rotated := mustRing(t, Key{"k2", secretB}, Key{"k1", secretA})
	msg := []byte("v1\nl_x\nf_y\n1767225540")
	kid, tag := old.Tag("cobranca/file-link/v1", msg)
	if kid != "k1" || len(tag) != 32 {
		t.Fatalf("Tag = %q, %d bytes", kid, len(tag))
	}
	if err := rotated.CheckTag(kid, "cobranca/file-link/v1", msg, tag); err != nil {
		t.Errorf("CheckTag after rotation = %v", err)
	}
	if kid2, tag2 := rotated.Tag("cobranca/file-link/v1", msg); kid2 != "k2" || string(tag2) == string(tag) {
		t.Errorf("rotated Tag = %q, same tag %t; want k2 and another tag", kid2, string(tag2) == string(tag))
	}
	// TagUnder derives again, under the key named, what Tag made under the current one.
	if again, err := rotated.TagUnder(kid, "cobranca/file-link/v1", msg); err != nil || string(again) != string(tag) {
		t.Errorf("TagUnder(%q) after rotation = %x, %v; want Tag's %x", kid, again, err, tag)
	}
	if _, err := rotated.TagUnder("k9", "cobranca/file-link/v1", msg); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("TagUnder(an unknown key) = %v, want ErrUnknownKey", err)
	}
	flipped := append([]byte(nil), tag...)
	flipped[0] ^= 1
	for name, tt := range map[string]struct {
		kid, use string
		msg, tag []byte
		want     error
	}{
		"other message": {kid, "cobranca/file-link/v1", []byte("v1\nl_x\nf_y\n1767225541"), tag, ErrForged},
		"other use":     {kid, "cobranca/file-link/v2", msg, tag, ErrForged},
		"flipped tag":   {kid, "cobranca/file-link/v1", msg, flipped, ErrForged},
		"short tag":     {kid, "cobranca/file-link/v1", msg, tag[:31], ErrForged},
		"other key":     {"k2", "cobranca/file-link/v1", msg, tag, ErrForged},
		"unknown key":   {"k9", "cobranca/file-link/v1", msg, tag, ErrUnknownKey},
	} {
		if err := rotated.CheckTag(tt.kid, tt.use, tt.msg, tt.tag); !errors.Is(err, tt.want) {
			t.Errorf("%s: CheckTag = %v, want %v", name, err, tt.want)
		}
	}
	for _, use := range []string{"", "a\x00b", "cobranca/reqstate"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Tag(use %q) did not panic", use)
				}
			}()
			old.Tag(use, msg)
		}()
	}
}
