package collections

import (
	"testing"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/reminders"
)

// FuzzOpenCursor: any text either opens, for the filters it was sealed for, to a position that
// seals back to exactly that text, or is refused; nothing panics.
func FuzzOpenCursor(f *testing.F) {
	filters := []reminders.Filter{{}, {CustomerID: "c1"}, {State: reminders.Draft}, {CustomerID: "c1", State: reminders.Discarded}}
	for _, flt := range filters {
		for _, p := range []reminders.Position{{CreatedAt: 0, ID: ident.Encode(reminders.IDPrefix, [ident.Size]byte{})}, {CreatedAt: 1782907200123456, ID: ident.New(reminders.IDPrefix)}} {
			c, err := sealCursor(p, flt)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(c, flt.CustomerID, string(flt.State))
		}
	}
	f.Add("", "", "")
	f.Add("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "c1", "")
	f.Fuzz(func(t *testing.T, s, customer, state string) {
		flt := reminders.Filter{CustomerID: customer, State: reminders.State(state)}
		p, ok := openCursor(s, flt)
		if !ok {
			return
		}
		if !reminders.ValidID(p.ID) || p.CreatedAt < 0 {
			t.Fatalf("openCursor(%q) = %+v: not a position reminders makes", s, p)
		}
		again, err := sealCursor(p, flt)
		if err != nil || again != s {
			t.Fatalf("openCursor(%q) = %+v, which seals to %q, %v", s, p, again, err)
		}
		for _, other := range filters {
			if other != flt {
				if _, ok := openCursor(s, other); ok && filterDigestOf(other) != filterDigestOf(flt) {
					t.Fatalf("cursor %q for %+v opens for %+v", s, flt, other)
				}
			}
		}
	})
}

func filterDigestOf(f reminders.Filter) string { return string(filterDigest(f)) }

// TestFilterDigestSeparates: the filters' digest tells a customer id ending in a state's name
// apart from that customer and state.
func TestFilterDigestSeparates(t *testing.T) {
	a := reminders.Filter{CustomerID: "c1draft"}
	b := reminders.Filter{CustomerID: "c1", State: reminders.Draft}
	if filterDigestOf(a) == filterDigestOf(b) {
		t.Errorf("filterDigest(%+v) = filterDigest(%+v)", a, b)
	}
}
