package web

import (
	"errors"
	"net/url"
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
)

// FuzzTrailFilter: any query either reads as a filter the audit log accepts, which the
// page's own links write back as the same filter, or is refused naming one of the fields.
func FuzzTrailFilter(f *testing.F) {
	for _, q := range []string{"", "tool=collections.send_reminder&risk=critical", "outcome=denied&subject=ana&actor=bot&clientId=c",
		"since=2026-12-02&until=2026-12-02T10:00", "since=2026-12-02T10:00&until=2026-12-02", "outcome=won", "since=%00", "tool=%ff"} {
		f.Add(q)
	}
	fields := map[string]bool{"tool": true, "risk": true, "outcome": true, "subject": true, "actor": true, "clientId": true, "since": true, "until": true}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		filter, form, err := trailFilter(q)
		if err != nil {
			var fe *failure.Error
			if !errors.As(err, &fe) || fe.Code != failure.InvalidArguments || !fields[fe.Field] {
				t.Fatalf("%q: %v, want invalid_arguments naming a field", raw, err)
			}
			return
		}
		if err := filter.Check(); err != nil {
			t.Fatalf("%q: the page accepted a filter the log refuses: %v", raw, err)
		}
		again, _, err := trailFilter(form.values())
		if err != nil || again != filter {
			t.Fatalf("%q: the page's link reads as %+v, %v; want %+v", raw, again, err, filter)
		}
	})
}
