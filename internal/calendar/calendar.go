// Package calendar knows when Brazilian banks count a day and when a message
// may go out: banking business days, and send windows in a time zone.
//
// The holidays are github.com/rickar/cal/v2/br's, with the bank holidays it
// lacks added (brazilRules says which, and on whose authority). A Calendar
// works each year's days out once, on first use, into small bitsets: a day's
// batch asks about every open invoice, so IsBusinessDay and NextOpen
// allocate nothing.
//
// A leaf: the standard library and rickar's packages only.
package calendar

import (
	"math/bits"
	"slices"
	"sync"
	"time"

	"github.com/rickar/cal/v2"
	"github.com/rickar/cal/v2/br"
)

// brazilRules are the days, besides Saturdays and Sundays, on which banks in
// Brazil do not open and which therefore are not business days.
//
//   - The national holidays of Lei 662/1949 (as amended) and Lei 6.802/1980,
//     from rickar's br package.
//   - Dia Nacional de Zumbi e da Consciência Negra, 20 November: national by
//     Lei 14.759/2023, from 2024; rickar's package lacks it.
//   - Carnival Monday and Tuesday, Good Friday and Corpus Christi: not
//     national holidays by law (Carnival and Corpus Christi are federal
//     "pontos facultativos"), yet FEBRABAN's national calendar of bank
//     holidays closes every branch on them, CMN Resolução 4.880/2020 makes
//     the days of that calendar non-business days for financial operations,
//     and ANBIMA's list of national holidays (the days on which bank reserves
//     do not move, which the market counts business days by:
//     https://www.anbima.com.br/feriados/feriados.asp) has all four.
//     rickar's package has Good Friday, Corpus Christi and Carnival Tuesday
//     only; Monday is added.
//
// Not closed here: state and municipal holidays (branches close locally, but
// a national calendar cannot know the customer's city); Ash Wednesday
// (branches open at noon); the last business day of the year (branches do
// not serve the public, but reserves settle: ANBIMA counts it).
//
// Every rule but Consciência Negra applies to every year: the calendar is
// today's law, not a history of it.
func brazilRules() []*cal.Holiday {
	return []*cal.Holiday{
		br.AnoNovo,
		&cal.Holiday{
			Name:   "Carnaval (segunda-feira)",
			Type:   cal.ObservanceBank,
			Offset: -48,
			Func:   cal.CalcEasterOffset,
		},
		br.Carnaval.Clone(&cal.Holiday{Name: "Carnaval (terça-feira)", Type: cal.ObservanceBank}),
		br.SextaFeiraSanta,
		br.Tiradentes,
		br.Trabalhador,
		br.CorpusChristi,
		br.Independencia,
		br.NossaSenhoraAparecida,
		br.Finados,
		br.Republica,
		&cal.Holiday{
			Name:      "Dia Nacional de Zumbi e da Consciência Negra",
			Type:      cal.ObservancePublic,
			StartYear: 2024,
			Month:     time.November,
			Day:       20,
			Func:      cal.CalcDayOfMonth,
		},
		br.Natal,
	}
}

// Years whose tables a Calendar keeps once computed: a fixed span, so the
// cache is bounded. A year outside it is computed at each call (it
// allocates, and is still right).
const (
	firstCachedYear = 1900
	cachedYears     = 400
)

// Calendar answers which days are banking business days. Make one with
// Brazil and share it: it is safe for concurrent use, and it computes each
// year once.
type Calendar struct {
	rules []*cal.Holiday
	cache [cachedYears]struct {
		once sync.Once
		year year
	}
}

// Brazil is the calendar of Brazilian banks (see brazilRules).
func Brazil() *Calendar {
	return &Calendar{rules: brazilRules()}
}

// year is one year's days, bit i standing for the day at index i (1
// January is 0).
type year struct {
	holiday  bitset
	business bitset  // Monday to Friday, and no holiday
	names    []named // the holidays, in date order
}

type named struct {
	index int
	name  string
}

func (c *Calendar) year(y int) *year {
	if y < firstCachedYear || y >= firstCachedYear+cachedYears {
		yr := c.build(y)
		return &yr
	}
	e := &c.cache[y-firstCachedYear]
	e.once.Do(func() { e.year = c.build(y) })
	return &e.year
}

func (c *Calendar) build(y int) year {
	var yr year
	for _, h := range c.rules {
		// Brazil moves no holiday off a weekend: the observed date is the
		// actual one.
		actual, _ := h.Calc(y)
		if actual.IsZero() {
			continue
		}
		// rickar gives midnight in cal.DefaultLoc (the machine's zone);
		// where summer time skipped that midnight, time.Date answered 23:00
		// of the day before. Noon is on the holiday whatever the zone did.
		d := DateOf(actual.Add(12*time.Hour), actual.Location())
		if d.Year != y {
			continue
		}
		_, i := d.ordinal()
		if k := slices.IndexFunc(yr.names, func(n named) bool { return n.index == i }); k >= 0 {
			yr.names[k].name += " / " + h.Name // Good Friday on 21 April (2000, 2079)
			continue
		}
		yr.holiday.set(i)
		yr.names = append(yr.names, named{i, h.Name})
	}
	slices.SortFunc(yr.names, func(a, b named) int { return a.index - b.index })
	jan1 := Date{y, time.January, 1}.Weekday()
	for i := range daysInYear(y) {
		switch (jan1 + time.Weekday(i)) % 7 {
		case time.Saturday, time.Sunday:
		default:
			if !yr.holiday.has(i) {
				yr.business.set(i)
			}
		}
	}
	return yr
}

// Holiday is the name of the bank holiday on d, if d is one. Two holidays on
// one day are named together ("Sexta-feira Santa / Tiradentes").
func (c *Calendar) Holiday(d Date) (name string, ok bool) {
	y, i := d.ordinal()
	for _, n := range c.year(y).names {
		if n.index == i {
			return n.name, true
		}
	}
	return "", false
}

// IsBusinessDay reports whether banks count d: Monday to Friday, and not a
// bank holiday.
func (c *Calendar) IsBusinessDay(d Date) bool {
	y, i := d.ordinal()
	return c.year(y).business.has(i)
}

// isHoliday reports whether d is a bank holiday, whatever its weekday.
func (c *Calendar) isHoliday(d Date) bool {
	y, i := d.ordinal()
	return c.year(y).holiday.has(i)
}

// AddBusinessDays is the n-th business day after d when n > 0, the |n|-th
// before it when n < 0, and, when n == 0, d itself if it is a business day,
// else the next one. It walks whole years at a time, so a large n costs
// about |n|/250 steps.
func (c *Calendar) AddBusinessDays(d Date, n int) Date {
	y, i := d.ordinal()
	switch {
	case n == 0 && c.year(y).business.has(i):
		return d.normal()
	case n == 0:
		return c.forward(y, i, 1)
	case n > 0:
		return c.forward(y, i, n)
	}
	return c.backward(y, i, -n)
}

// forward is the n-th business day (n ≥ 1) after the day at index i of year y.
func (c *Calendar) forward(y, i, n int) Date {
	for {
		b := &c.year(y).business
		after := b.count(i+1, daysInYear(y))
		if n <= after {
			return fromOrdinal(y, b.nth(i+1, n))
		}
		n -= after
		y, i = y+1, -1
	}
}

// backward is the n-th business day (n ≥ 1) before the day at index i of
// year y.
func (c *Calendar) backward(y, i, n int) Date {
	for {
		b := &c.year(y).business
		before := b.count(0, i)
		if n <= before {
			return fromOrdinal(y, b.nthBelow(i, n))
		}
		n -= before
		y--
		i = daysInYear(y)
	}
}

// BusinessDaysBetween counts the business days in (from, to]: the days after
// from up to and including to. When to is before from it is minus the count
// in (to, from]. Its cost grows with the number of years between them.
func (c *Calendar) BusinessDaysBetween(from, to Date) int {
	if to.Before(from) {
		return -c.BusinessDaysBetween(to, from)
	}
	y1, i1 := from.ordinal()
	y2, i2 := to.ordinal()
	if y1 == y2 {
		return c.year(y1).business.count(i1+1, i2+1)
	}
	n := c.year(y1).business.count(i1+1, daysInYear(y1))
	for y := y1 + 1; y < y2; y++ {
		n += c.year(y).business.count(0, daysInYear(y))
	}
	return n + c.year(y2).business.count(0, i2+1)
}

// bitset holds one bit per day of a year (366 ≤ 6×64).
type bitset [6]uint64

func (b *bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b *bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }

// span is the mask of word w's bits whose index is in [lo, hi).
func span(w, lo, hi int) uint64 {
	l := min(max(lo-w*64, 0), 64)
	h := min(max(hi-w*64, 0), 64)
	if l >= h {
		return 0
	}
	return ^uint64(0) >> (64 - (h - l)) << l
}

// count is the number of set bits with index in [lo, hi).
func (b *bitset) count(lo, hi int) int {
	n := 0
	for w, word := range b {
		n += bits.OnesCount64(word & span(w, lo, hi))
	}
	return n
}

// nth is the index of the n-th set bit (n ≥ 1) at or after lo; -1 if there
// are fewer.
func (b *bitset) nth(lo, n int) int {
	for w, word := range b {
		word &= span(w, lo, len(b)*64)
		if c := bits.OnesCount64(word); n > c {
			n -= c
			continue
		}
		for ; n > 1; n-- {
			word &= word - 1 // drop the lowest set bit
		}
		return w*64 + bits.TrailingZeros64(word)
	}
	return -1
}

// nthBelow is the index of the n-th set bit (n ≥ 1) counting down from
// hi-1; -1 if there are fewer.
func (b *bitset) nthBelow(hi, n int) int {
	for w := len(b) - 1; w >= 0; w-- {
		word := b[w] & span(w, 0, hi)
		if c := bits.OnesCount64(word); n > c {
			n -= c
			continue
		}
		for ; n > 1; n-- {
			word &^= 1 << (63 - bits.LeadingZeros64(word)) // drop the highest set bit
		}
		return w*64 + 63 - bits.LeadingZeros64(word)
	}
	return -1
}
