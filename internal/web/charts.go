package web

import (
	"context"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/chart"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// Charts is what the health page's charts read (issue 29): the tool calls per hour, and the
// ledger's open amount by aging bucket and cash collected per week.
type Charts struct {
	// Calls counts the tool calls per hour: one per process, so that the final hours are
	// read from the store once.
	Calls *auditlog.CallsCache
	// Ledger is the store the ledger charts read; nil: no ledger charts. They are read in
	// the background, by Pages.RunCharts, which must run.
	Ledger store.Querier
}

// The charts' reach.
const (
	callHours = 7 * 24 // the calls chart: the last 7 days, hour by hour
	cashWeeks = 12     // the cash chart: the last 12 weeks
)

// chartView is one chart and the table of its numbers.
type chartView struct {
	ID  string // the figure's id, for the table's aria-describedby and links
	SVG template.HTML
	// Caption names the table; Head are its column headers after the first (Corner); Rows
	// its rows, each a header cell and the values.
	Caption, Corner string
	Head            []string
	Rows            []chartRow
	// Empty is said instead of an empty table.
	Empty string
}

type chartRow struct {
	Name   string
	Values []string
}

// chartsView is the health page's charts.
type chartsView struct {
	Calls []chartView
	// Ledger are the ledger charts, as of LedgerAt (read in the background: ledgerMemo).
	Ledger   []chartView
	LedgerAt time.Time
}

// tierOrder is the calls chart's series order: the tiers, least risky first.
var tierOrder = []contract.Risk{contract.Low, contract.Medium, contract.High, contract.Critical, contract.Forbidden}

// outcomeGroups are the calls chart's outcomes: each group's outcomes; the last takes the rest.
var outcomeGroups = [][]auditlog.Outcome{
	{auditlog.Allowed}, {auditlog.InputRequired}, {auditlog.Rejected}, {auditlog.Denied},
	{auditlog.RateLimited}, {auditlog.Failed}, nil,
}

func outcomeGroup(o auditlog.Outcome) int {
	for i, g := range outcomeGroups {
		if slices.Contains(g, o) {
			return i
		}
	}
	return len(outcomeGroups) - 1
}

// readCharts reads the charts the Config gives data for.
func (p *Pages) readCharts(ctx context.Context, t *texts) (*chartsView, error) {
	v := &chartsView{}
	now := p.now()
	if p.charts.Calls != nil {
		calls, err := p.callCharts(ctx, t, now)
		if err != nil {
			return nil, err
		}
		v.Calls = calls
	}
	if p.ledgerMemo != nil {
		lc, err := p.ledgerMemo.charts(ctx, now)
		if err != nil {
			return nil, err
		}
		aging, cash := lc.aging, lc.cash
		v.LedgerAt = lc.at
		for _, a := range aging {
			c, err := agingChart(t, a)
			if err != nil {
				return nil, err
			}
			v.Ledger = append(v.Ledger, c)
		}
		if len(aging) == 0 {
			c, err := agingChart(t, ledger.Aging{Currency: "BRL"})
			if err != nil {
				return nil, err
			}
			v.Ledger = append(v.Ledger, c)
		}
		for _, c := range cash {
			cv, err := cashChart(t, c)
			if err != nil {
				return nil, err
			}
			v.Ledger = append(v.Ledger, cv)
		}
		if len(cash) == 0 {
			cv, err := cashChart(t, ledger.CashWeeks{Currency: "BRL"})
			if err != nil {
				return nil, err
			}
			v.Ledger = append(v.Ledger, cv)
		}
	}
	return v, nil
}

// callCharts draws the calls of the last 7 days, hour by hour (the current hour last), by tier
// and outcome as small multiples: a chart per risk tier with calls, each hour's bar stacked by
// outcome. Every chart has the same outcomes in the same colors and one scale, so that a
// reader compares the tiers at a glance; the tiers without calls draw nothing (no call at all:
// one empty chart says so).
func (p *Pages) callCharts(ctx context.Context, t *texts, now time.Time) ([]chartView, error) {
	to := now.UTC().Truncate(time.Hour).Add(time.Hour)
	from := to.Add(-callHours * time.Hour)
	cells, err := p.charts.Calls.CallsPerHour(ctx, from, to)
	if err != nil {
		return nil, err
	}
	labels, ticks := make([]string, callHours), make([]string, callHours)
	for h := range callHours {
		at := from.Add(time.Duration(h) * time.Hour)
		labels[h] = t.Date(at)
		if local := at.In(brasilia); local.Hour() == 0 {
			ticks[h] = t.Day(local)
		}
	}
	// The tiers: the contract's, then any other, in name order.
	tiers := slices.Clone(tierOrder)
	for _, c := range cells {
		if r := contract.Risk(c.Risk); !slices.Contains(tiers, r) {
			tiers = append(tiers, r)
		}
	}
	slices.SortStableFunc(tiers[len(tierOrder):], func(a, b contract.Risk) int { return strings.Compare(string(a), string(b)) })
	// calls[tier][outcome group][hour]; the outcome groups with a call in any tier; the
	// busiest hour of any tier.
	calls := make([][][]float64, len(tiers))
	for i := range calls {
		calls[i] = make([][]float64, len(outcomeGroups))
		for o := range calls[i] {
			calls[i][o] = make([]float64, callHours)
		}
	}
	seen := make([]bool, len(outcomeGroups))
	busiest := make([]float64, len(tiers)*callHours)
	for _, c := range cells {
		h := int(c.Hour.Sub(from) / time.Hour)
		if h < 0 || h >= callHours {
			continue
		}
		i, o := slices.Index(tiers, contract.Risk(c.Risk)), outcomeGroup(c.Outcome)
		calls[i][o][h] += float64(c.Count)
		busiest[i*callHours+h] += float64(c.Count)
		seen[o] = true
	}
	w := &t.Charts
	var names []string
	for o, name := range w.Outcomes {
		if seen[o] {
			names = append(names, name)
		}
	}
	most := slices.Max(busiest)
	// Counts are whole: a grid line between two (a chart of 1 call has lines at ¼, ½, ¾) is
	// left unlabelled.
	count := func(v float64) string {
		if v != math.Trunc(v) {
			return ""
		}
		return t.Count(int64(v))
	}
	var views []chartView
	for i, r := range tiers {
		var series [][]float64
		for o := range outcomeGroups {
			if seen[o] {
				series = append(series, calls[i][o])
			}
		}
		if !slices.ContainsFunc(busiest[i*callHours:(i+1)*callHours], func(x float64) bool { return x != 0 }) {
			continue
		}
		name, id := t.Tiers[r], "calls-"+string(r)
		if !slices.Contains(tierOrder, r) {
			// A tier the contracts do not name, read from the store: its name is shown
			// escaped, never made an id.
			name, id = string(r), "calls-other-"+strconv.Itoa(i-len(tierOrder)+1)
		}
		v, err := stackedView(t, id, name+w.CallsOfTier, w.CallsDesc, labels, ticks, names, series, count, most)
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	if len(views) == 0 {
		v, err := stackedView(t, "calls", w.Calls, w.CallsDesc, labels, ticks, nil, nil, count, 0)
		if err != nil {
			return nil, err
		}
		views = append(views, v)
	}
	return views, nil
}

// stackedView draws a stacked chart of the series (names, values by label) on a scale that
// reaches most at least, and its table: a row per label with a value, a column per series and
// the total.
func stackedView(t *texts, id, title, desc string, labels, ticks, names []string, values [][]float64, format chart.Format, most float64) (chartView, error) {
	c := chart.Stacked{Title: title, Desc: desc, Labels: labels, Ticks: ticks, Format: format, Empty: t.Charts.NoCalls, Max: most}
	v := chartView{ID: id, Caption: title, Corner: t.Charts.Hour, Empty: t.Charts.NoCalls}
	for i, vs := range values {
		c.Series = append(c.Series, chart.Series{Name: names[i], Values: vs})
		v.Head = append(v.Head, names[i])
	}
	if len(values) > 0 {
		v.Head = append(v.Head, t.Charts.Total)
	}
	for j, label := range labels {
		var total float64
		row := chartRow{Name: label}
		for _, vs := range values {
			total += vs[j]
			row.Values = append(row.Values, format(vs[j]))
		}
		if total != 0 {
			v.Rows = append(v.Rows, chartRow{Name: row.Name, Values: append(row.Values, format(total))})
		}
	}
	svg, err := c.SVG()
	v.SVG = svg
	return v, err
}

// agingChart draws the open amount of one currency by aging bucket.
func agingChart(t *texts, a ledger.Aging) (chartView, error) {
	w := &t.Charts
	money := moneyIn(t, a.Currency)
	title := w.OpenByAging + currencyNote(a.Currency)
	c := chart.Bars{Title: title, Desc: w.OpenByAgingDesc, Format: func(v float64) string { return money(int64(v)) }}
	v := chartView{ID: "aging-" + strings.ToLower(a.Currency), Caption: title, Corner: w.Bucket, Head: []string{w.OpenAmount, w.Invoices}}
	for i, b := range a.Buckets {
		name := w.Buckets[i]
		if name == "" {
			name = value.AgingBucketNames[i]
		}
		c.Labels = append(c.Labels, name)
		c.Values = append(c.Values, float64(b.OpenCents))
		v.Rows = append(v.Rows, chartRow{Name: name, Values: []string{money(b.OpenCents), t.Count(b.Invoices)}})
	}
	svg, err := c.SVG()
	v.SVG = svg
	return v, err
}

// cashChart draws the cash collected in one currency per week.
func cashChart(t *texts, cw ledger.CashWeeks) (chartView, error) {
	w := &t.Charts
	money := moneyIn(t, cw.Currency)
	title := w.CashPerWeek + currencyNote(cw.Currency)
	c := chart.Bars{Title: title, Desc: w.CashPerWeekDesc, Format: func(v float64) string { return money(int64(v)) }, Empty: w.NoCash}
	v := chartView{ID: "cash-" + strings.ToLower(cw.Currency), Caption: title, Corner: w.WeekOf, Head: []string{w.Collected, w.Payments}}
	for _, wk := range cw.Weeks {
		day, _ := time.ParseInLocation(time.DateOnly, wk.Week, brasilia) // the ledger's own
		name := t.Day(day)
		c.Labels = append(c.Labels, name)
		c.Values = append(c.Values, float64(wk.Cents))
		v.Rows = append(v.Rows, chartRow{Name: name, Values: []string{money(wk.Cents), t.Count(wk.Payments)}})
	}
	if len(cw.Weeks) == 0 {
		v.Empty = w.NoCash
	}
	svg, err := c.SVG()
	v.SVG = svg
	return v, err
}

// moneyIn writes amounts in currency as the reader writes reais ($.T.Money), naming any
// other currency by its code instead of R$.
func moneyIn(t *texts, currency string) func(int64) string {
	if currency == "" || currency == "BRL" {
		return t.Money
	}
	return func(cents int64) string { return strings.Replace(t.Money(cents), "R$", currency, 1) }
}

// currencyNote is what a chart's title adds for a currency other than the real.
func currencyNote(currency string) string {
	if currency == "" || currency == "BRL" {
		return ""
	}
	return " (" + currency + ")"
}

// Day is a calendar day as the reader writes it, short: 02/12 in Portuguese, Dec 2 in English.
func (t *texts) Day(at time.Time) string {
	if t.Tag == portuguese.Tag {
		return at.Format("02/01")
	}
	return at.Format("Jan 2")
}
