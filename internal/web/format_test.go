package web

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/limits"
)

func TestFormats(t *testing.T) {
	en, pt := &supported[0], &supported[1]
	for _, tc := range []struct {
		cents  int64
		en, pt string
	}{
		{0, "R$ 0.00", "R$ 0,00"},
		{5, "R$ 0.05", "R$ 0,05"},
		{123456, "R$ 1,234.56", "R$ 1.234,56"},
		{-100000, "−R$ 1,000.00", "−R$ 1.000,00"},
		{100000000, "R$ 1,000,000.00", "R$ 1.000.000,00"},
		{math.MaxInt64, "R$ 92,233,720,368,547,758.07", "R$ 92.233.720.368.547.758,07"},
		{math.MinInt64, "−R$ 92,233,720,368,547,758.08", "−R$ 92.233.720.368.547.758,08"},
	} {
		if got := en.Money(tc.cents); got != tc.en {
			t.Errorf("en.Money(%d) = %q, want %q", tc.cents, got, tc.en)
		}
		if got := pt.Money(tc.cents); got != tc.pt {
			t.Errorf("pt.Money(%d) = %q, want %q", tc.cents, got, tc.pt)
		}
	}
	if got := pt.Count(-1234567); got != "−1.234.567" {
		t.Errorf("pt.Count(-1234567) = %q", got)
	}
	at := time.Date(2026, 12, 2, 1, 5, 0, 0, time.UTC) // 22:05 of the 1st in Brasília
	if got := pt.Date(at); got != "01/12/2026 22:05" {
		t.Errorf("pt.Date(%v) = %q, want 01/12/2026 22:05", at, got)
	}
	if got := en.Date(at); got != "2026-12-01 22:05 BRT" {
		t.Errorf("en.Date(%v) = %q, want 2026-12-01 22:05 BRT", at, got)
	}
	for d, want := range map[time.Duration]string{30 * time.Second: "less than a minute", 12 * time.Minute: "12 min",
		3*time.Hour + 5*time.Minute: "3 h 5 min", 52 * time.Hour: "2 d 4 h", time.Hour: "1 h", 48 * time.Hour: "2 d"} {
		if got := en.Age(d); got != want {
			t.Errorf("en.Age(%v) = %q, want %q", d, got, want)
		}
	}
	if got := pt.Limit(limits.Limit{Rate: 1200, Period: time.Hour, Burst: 50}); got != "1.200 / 1 h, rajadas de até 50" {
		t.Errorf("pt.Limit = %q", got)
	}
	if got := en.Limit(limits.Limit{}); got != "no limit" {
		t.Errorf("en.Limit(off) = %q", got)
	}
}

// FuzzMoney: every amount reads back as itself, in both languages.
func FuzzMoney(f *testing.F) {
	for _, c := range []int64{0, 1, -1, 99, 100, 123456, math.MaxInt64, math.MinInt64} {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, cents int64) {
		for _, tx := range []*texts{&supported[0], &supported[1]} {
			s := tx.Money(cents)
			thousands, decimal := tx.separators()
			digits := strings.NewReplacer("R$ ", "", thousands, "", decimal, "", "−", "-").Replace(s)
			if back, err := strconv.ParseInt(digits, 10, 64); err != nil && cents != math.MinInt64 || err == nil && back != cents {
				t.Errorf("%s.Money(%d) = %q, reads back %s", tx.Tag, cents, s, digits)
			}
			if i := strings.LastIndex(s, decimal); i != len(s)-3 {
				t.Errorf("%s.Money(%d) = %q: not two decimals", tx.Tag, cents, s)
			}
		}
	})
}

// FuzzCursor: a place in the inbox is what its link wrote, or refused naming "after".
func FuzzCursor(f *testing.F) {
	id := ident.New(approval.Prefix)
	for _, s := range []string{"", "0." + id, "1764633600000000." + id, "x", "1.", ".a_x", "01." + id, "-1." + id, "1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseCursor(s)
		if err != nil {
			if !strings.Contains(err.Error(), "after") {
				t.Errorf("parseCursor(%q) = %v, want the field named", s, err)
			}
			return
		}
		if s != "" && formatCursor(c) != s {
			t.Errorf("parseCursor(%q) = %+v, which writes %q", s, c, formatCursor(c))
		}
	})
}

// TestGrants: who may do what in the console (roles.go's table), and nothing for an agent.
func TestGrants(t *testing.T) {
	person := func(roles ...string) *auth.Principal {
		return &auth.Principal{Subject: "p", Kind: auth.KindHuman, Roles: roles}
	}
	for _, tc := range []struct {
		pr   *auth.Principal
		want []permission
	}{
		{person(RoleViewer), []permission{readConsole}},
		{person(RoleOperator), []permission{readConsole, readBodies, matchPayments, importFiles, pauseSchedules}},
		{person(RoleApprover), []permission{readConsole, readBodies, decideApprovals, pauseSchedules, resumeSchedules}},
		{person(RoleWriteOff), []permission{readConsole, readBodies, writeOff}},
		{person(RoleViewer, RoleWriteOff), []permission{readConsole, readBodies, writeOff}},
		{person("collections.other"), nil},
		{person(), nil},
		{&auth.Principal{Subject: "bot", Kind: auth.KindAgent, Roles: Roles}, nil},
		{nil, nil},
	} {
		var got []permission
		for _, perm := range []permission{readConsole, readBodies, matchPayments, importFiles, decideApprovals, writeOff, pauseSchedules, resumeSchedules} {
			if may(tc.pr, perm) {
				got = append(got, perm)
			}
		}
		if strings.Join(toStrings(got), " ") != strings.Join(toStrings(tc.want), " ") {
			t.Errorf("%v may %v, want %v", tc.pr, got, tc.want)
		}
	}
}

func toStrings(ps []permission) []string {
	var out []string
	for _, p := range ps {
		out = append(out, string(p))
	}
	return out
}
