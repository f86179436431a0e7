package web_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// insertCall writes the audit event of a tool call of a tier and outcome at a time of the
// test's choosing, as the store's owner can (the serving role cannot choose occurred_at).
func insertCall(t *testing.T, db store.DB, at time.Time, risk string, outcome auditlog.Outcome) {
	t.Helper()
	nonce := make([]byte, 16)
	rand.Read(nonce)
	sql := `INSERT INTO audit_event (occurred_at, event, tool, risk, outcome, server_time, nonce, mac)
VALUES (to_timestamp($1::bigint / 1000000.0), 'e', 't', $2, $3, $1, $4, $5)`
	if db.Dialect() == store.SQLite {
		sql = strings.Replace(sql, "to_timestamp($1::bigint / 1000000.0)", "$1", 1)
	}
	if _, err := db.Exec(context.Background(), sql, at.UnixMicro(), risk, string(outcome), nonce, make([]byte, 32)); err != nil {
		t.Fatal(err)
	}
}

// seedLedger writes invoices in three aging buckets as of today (Brasília) and one payment
// made today, partly paying one of them.
func seedLedger(t *testing.T, e *env, today time.Time) {
	t.Helper()
	day := func(d int) string { return today.AddDate(0, 0, d).Format(time.DateOnly) }
	ctx, now, by := context.Background(), e.clock.Now(), ledger.Actor{Subject: "test"}
	if err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := ledger.UpsertInvoices(ctx, tx, []ledger.InvoiceRecord{
			{InvoiceID: "NF-A", CustomerID: "C-1", Currency: "BRL", AmountCents: 10000, DueDate: day(10)},    // not due
			{InvoiceID: "NF-B", CustomerID: "C-1", Currency: "BRL", AmountCents: 5000, DueDate: day(-5)},     // 1–30
			{InvoiceID: "NF-C", CustomerID: "C-2", Currency: "BRL", AmountCents: 123456, DueDate: day(-100)}, // over 90
		}, now); err != nil {
			return err
		}
		p, _, err := ledger.RecordPayment(ctx, tx, ledger.PaymentRecord{Source: "agent", SourceRef: "p1", AmountCents: 3000, Currency: "BRL", PaidOn: day(0),
			Method: ledger.MethodPIX}, by, now)
		if err != nil {
			return err
		}
		_, err = ledger.Allocate(ctx, tx, p.ID, []ledger.Planned{{InvoiceID: "NF-B", AmountCents: 3000}}, by, now)
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// asOfRE finds when the health page's ledger charts were read.
var asOfRE = regexp.MustCompile(`<time datetime="([^"]+)">[^<]*</time></p>`)

// freshCharts moves the clock past the ledger charts' age and loads the health page (get)
// until it shows numbers read since then: the page that finds them old asks for a read in the
// background (Pages.RunCharts) and shows the old ones; a page after the read shows the new.
// It returns the page and when the numbers were read.
func freshCharts(t testing.TB, e *env, get func() string) (string, time.Time) {
	t.Helper()
	e.clock.Advance(61 * time.Second)
	since := e.clock.Now().Truncate(time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		body := get()
		if m := asOfRE.FindStringSubmatch(body); m != nil {
			if at, err := time.Parse(time.RFC3339, m[1]); err == nil && !at.Before(since) {
				return body, at
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the health page's ledger charts are not read again 30 s after a page found them old:\n%s", body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rowOf is the HTML of the table row headed name, within the part of body after marker.
func rowOf(body, marker, name string) string {
	_, after, _ := strings.Cut(body, marker)
	re := regexp.MustCompile(`<tr><th scope="row">` + regexp.QuoteMeta(name) + `</th>(.*?)</tr>`)
	if m := re.FindStringSubmatch(after); m != nil {
		return m[1]
	}
	return ""
}

func cell(label, v string) string { return `<td data-label="` + label + `" class="num">` + v + `</td>` }

// TestConsoleCharts: the health page draws the calls per hour by tier and outcome, the open
// amount by aging and the cash collected per week, each with a table of the same numbers in
// the reader's language; the ledger's numbers are read in the background, again when a page
// finds them a minute old, and the page says when they were read.
func TestConsoleCharts(t *testing.T) {
	// The store's owner: the serving role cannot choose an event's time (insertCall).
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			consoleCharts(t, f.Migrated(t))
		})
	}
}

// TestConsoleChartsNoCalls: with no tool call in the last 7 days, the calls' place is one empty
// chart saying so, with no table.
func TestConsoleChartsNoCalls(t *testing.T) {
	e := newEnv(t, storetest.SQLite(t), false)
	b := e.browser(t)
	b.open(t, web.HealthPath, viewer)
	p := b.get(t, web.HealthPath+"?lang=en")
	_, fig, _ := strings.Cut(p.body, `<figure class="chart" id="calls"`)
	fig, _, _ = strings.Cut(fig, `<h2`)
	if !strings.Contains(fig, `role="img"`) || !strings.Contains(fig, "No tool call in the last 7 days.") || strings.Contains(fig, "<table") ||
		strings.Count(p.body, `<figure class="chart" id="calls`) != 1 {
		t.Errorf("the calls charts with no call: want one empty chart saying so, no table:\n%s", p.body)
	}
}

func consoleCharts(t *testing.T, db store.DB) {
	{
		e := newEnv(t, db, false)
		now := e.clock.Now()
		hour := now.UTC().Truncate(time.Hour).Add(-2 * time.Hour)
		for range 3 {
			insertCall(t, db, hour.Add(time.Minute), "low", auditlog.Allowed)
		}
		insertCall(t, db, hour.Add(59*time.Minute), "critical", auditlog.Denied)
		insertCall(t, db, hour.Add(-30*time.Hour), "high", auditlog.RateLimited)
		insertCall(t, db, now.Add(-8*24*time.Hour), "low", auditlog.Allowed) // before the 7 days
		insertCall(t, db, hour, "", auditlog.Denied)                         // no tier: no tool call
		brt := time.FixedZone("BRT", -3*60*60)
		today := now.In(brt)
		seedLedger(t, e, today)

		b := e.browser(t)
		b.open(t, web.HealthPath, viewer)
		// The charts were read when the pages started, before the ledger had anything.
		_, readAt := freshCharts(t, e, func() string { return b.get(t, web.HealthPath).body })
		monday := today.AddDate(0, 0, -((int(today.Weekday()) + 6) % 7))
		for _, tc := range []struct {
			lang string
			want map[[3]string]string // {marker, row, ""} → the row's cells
		}{
			{"en", map[[3]string]string{
				{`id="calls-low"`, hour.In(brt).Format("2006-01-02 15:04 MST")}:                       cell("Allowed", "3") + cell("Denied", "0") + cell("Rate limited", "0") + cell("Total", "3"),
				{`id="calls-high"`, hour.Add(-30 * time.Hour).In(brt).Format("2006-01-02 15:04 MST")}: cell("Allowed", "0") + cell("Denied", "0") + cell("Rate limited", "1") + cell("Total", "1"),
				{`id="calls-critical"`, hour.In(brt).Format("2006-01-02 15:04 MST")}:                  cell("Allowed", "0") + cell("Denied", "1") + cell("Rate limited", "0") + cell("Total", "1"),
				{`id="aging-brl"`, "Not due"}:                                                         cell("Open amount", "R$ 100.00") + cell("Invoices", "1"),
				{`id="aging-brl"`, "1–30 days"}:                                                       cell("Open amount", "R$ 20.00") + cell("Invoices", "1"),
				{`id="aging-brl"`, "31–60 days"}:                                                      cell("Open amount", "R$ 0.00") + cell("Invoices", "0"),
				{`id="aging-brl"`, "Over 90 days"}:                                                    cell("Open amount", "R$ 1,234.56") + cell("Invoices", "1"),
				{`id="cash-brl"`, monday.Format("Jan 2")}:                                             cell("Collected", "R$ 30.00") + cell("Payments", "1"),
			}},
			{"pt-BR", map[[3]string]string{
				{`id="calls-low"`, hour.In(brt).Format("02/01/2006 15:04")}:      cell("Permitidas", "3") + cell("Negadas", "0") + cell("Limite de taxa", "0") + cell("Total", "3"),
				{`id="calls-critical"`, hour.In(brt).Format("02/01/2006 15:04")}: cell("Permitidas", "0") + cell("Negadas", "1") + cell("Limite de taxa", "0") + cell("Total", "1"),
				{`id="aging-brl"`, "A vencer"}:                                   cell("Valor em aberto", "R$ 100,00") + cell("Faturas", "1"),
				{`id="aging-brl"`, "Mais de 90 dias"}:                            cell("Valor em aberto", "R$ 1.234,56") + cell("Faturas", "1"),
				{`id="cash-brl"`, monday.Format("02/01")}:                        cell("Recebido", "R$ 30,00") + cell("Pagamentos", "1"),
			}},
		} {
			p := b.get(t, web.HealthPath+"?lang="+tc.lang)
			if p.resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: the health page = %d:\n%s", tc.lang, p.resp.StatusCode, p.body)
			}
			for k, want := range tc.want {
				if got := rowOf(p.body, k[0], k[1]); got != want {
					t.Errorf("%s: the row %q of %s = %q, want %q", tc.lang, k[1], k[0], got, want)
				}
			}
			// Each chart is an SVG image, before its table.
			for _, id := range []string{"calls-low", "calls-high", "calls-critical", "aging-brl", "cash-brl"} {
				_, fig, _ := strings.Cut(p.body, `id="`+id+`"`)
				svg, table := strings.Index(fig, `<svg `), strings.Index(fig, `<table class="rows">`)
				if svg < 0 || table < svg || !strings.Contains(fig[svg:table], `role="img"`) {
					t.Errorf("%s: %s has no SVG chart before its table:\n%s", tc.lang, id, p.body)
				}
			}
			// The calls by tier and outcome: a chart per tier with calls, least risky first,
			// each on the scale of the busiest hour of any (3 calls: the grid tops at 3), its
			// table listing only its hours with calls in the last 7 days.
			figures := regexp.MustCompile(`<figure class="chart" id="(calls-[a-z-]+)"`).FindAllStringSubmatch(p.body, -1)
			var ids []string
			for _, f := range figures {
				ids = append(ids, f[1])
			}
			if want := []string{"calls-low", "calls-high", "calls-critical"}; !slices.Equal(ids, want) {
				t.Errorf("%s: the calls charts are %q, want %q", tc.lang, ids, want)
			}
			for _, id := range ids {
				_, fig, _ := strings.Cut(p.body, `id="`+id+`"`)
				fig, _, _ = strings.Cut(fig, `</table>`)
				if !strings.Contains(fig, `text-anchor="end" fill="#4f5563">3</text>`) {
					t.Errorf("%s: %s's scale does not reach 3, the busiest hour of any tier:\n%s", tc.lang, id, fig)
				}
				if n := strings.Count(fig, `<tr><th scope="row">`); n != 1 {
					t.Errorf("%s: %s's table has %d rows, want the 1 hour with calls:\n%s", tc.lang, id, n, fig)
				}
			}
		}

		// The ledger's numbers are kept for a minute: an invoice recorded now shows once a
		// page a minute later has had them read again, and the page says as of when.
		p := b.get(t, web.HealthPath+"?lang=pt-BR")
		asOf := regexp.MustCompile(`posição de <time datetime="[^"]+">([^<]+)</time>`).FindStringSubmatch(p.body)
		if want := readAt.In(brt).Format("02/01/2006 15:04"); asOf == nil || asOf[1] != want {
			t.Errorf("the page says as of %q, want %s", asOf, want)
		}
		if err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, err := ledger.UpsertInvoices(ctx, tx, []ledger.InvoiceRecord{{InvoiceID: "NF-D", CustomerID: "C-3", Currency: "BRL", AmountCents: 100, DueDate: today.Format(time.DateOnly)}}, e.clock.Now())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(30 * time.Second)
		if got, want := rowOf(b.get(t, web.HealthPath).body, `id="aging-brl"`, "Not due"), cell("Open amount", "R$ 100.00")+cell("Invoices", "1"); got != want {
			t.Errorf("30 s later, not due = %q, want the memoized %q", got, want)
		}
		e.clock.Advance(31 * time.Second)
		if got, want := rowOf(b.get(t, web.HealthPath).body, `id="aging-brl"`, "Not due"), cell("Open amount", "R$ 100.00")+cell("Invoices", "1"); got != want {
			t.Errorf("a minute later, the first page: not due = %q, want the old %q, while the charts are read again", got, want)
		}
		fresh, _ := freshCharts(t, e, func() string { return b.get(t, web.HealthPath).body })
		if got, want := rowOf(fresh, `id="aging-brl"`, "Not due"), cell("Open amount", "R$ 101.00")+cell("Invoices", "2"); got != want {
			t.Errorf("once read again, not due = %q, want %q", got, want)
		}
	}
}
