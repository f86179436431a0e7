// Package chart draws the console's charts as SVG on the server: a bar chart (open amount by
// aging bucket, cash collected per week) and a stacked bar chart (calls per hour by outcome,
// drawn as small multiples: one per risk tier, on one scale). The browser runs no chart code.
//
// The SVG is written for the console's pages, whose Content-Security-Policy is default-src
// 'none' with styles only by hash: so no <style> element, no style attribute, no script —
// presentation attributes (fill, stroke, font-size) only; a page's stylesheet may still
// restyle the class names. Each chart is an image to assistive technology (role="img", an
// aria-label, <title> and <desc>), every bar carries a <title> with its label and value, and
// its colors hold 3:1 against the white background (text 4.5:1). The same input always gives
// the same bytes. The table with the same numbers, for those who cannot see the chart, is the
// page's to render.
//
// The package imports the standard library only: a page handler formats the numbers (money in
// pt-BR or English) and passes the function.
package chart

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// Geometry of every chart, in SVG user units: the page scales the viewBox to its width.
const (
	width          = 720
	plotHeight     = 180 // the bars' area
	topPad         = 16  // above the highest tick's label
	xAxisHeight    = 34  // the category labels under the plot
	legendRow      = 20
	charWidth      = 7.2 // an estimate of one character at fontSize, for layout only
	fontSize       = 12
	ticks          = 4  // horizontal grid lines above zero, about
	maxValueLabels = 16 // bars above this count carry no value label
	maxAxisLabels  = 12 // auto labels on the category axis, at most
)

// Colors, each checked by the tests against white: text 4.5:1, bars and lines 3:1.
const (
	background = "#ffffff"
	textColor  = "#1b1d21"
	mutedText  = "#4f5563"
	gridColor  = "#767b86" // the zero line; the other grid lines are lighter and decorative
	faintGrid  = "#d8dbe2"
)

// Palette is the fill of each series, in order: distinct to the common color blindnesses in
// lightness as well as hue, each at least 3:1 against white.
var Palette = [...]string{
	"#1f5fbf", // blue
	"#b3261e", // red
	"#1e7a3c", // green
	"#8a4f00", // brown
	"#6b3fa0", // purple
	"#00707a", // teal
	"#a3167a", // magenta
	"#4f5563", // gray
}

// Format writes a value for people (an amount, a count), as the page's language does.
type Format func(float64) string

// Bars is a bar chart: one bar per label.
type Bars struct {
	// Title names the chart: its <title> and aria-label. Required.
	Title string
	// Desc says what it shows, for assistive technology: its <desc>.
	Desc string
	// Labels name the bars, in order; Values are their heights (finite, not negative), as
	// many.
	Labels []string
	Values []float64
	// Ticks, when set, are the labels written under the bars (as many as Labels, "" for none);
	// otherwise Labels are, spaced to fit.
	Ticks []string
	// Format writes values (default: the shortest decimal).
	Format Format
	// Empty is written in the plot when there are no bars ("No data").
	Empty string
}

// Series is one layer of a stacked bar chart.
type Series struct {
	Name   string    // in the legend and the bars' titles
	Values []float64 // one per label: finite, not negative
}

// Stacked is a stacked bar chart: one bar per label, each the sum of its series' values, the
// first series at the bottom.
type Stacked struct {
	Title, Desc string // as in Bars
	Labels      []string
	Series      []Series // at most len(Palette)
	Ticks       []string
	Format      Format
	Empty       string
	// Max, when set, is the least the value axis reaches: charts compared side by side
	// (small multiples) share one scale when each is given the largest of their bars.
	// Finite, not negative.
	Max float64
}

// SVG draws the chart, or says which field is wrong.
func (c *Bars) SVG() (template.HTML, error) {
	s := Stacked{Title: c.Title, Desc: c.Desc, Labels: c.Labels, Ticks: c.Ticks, Format: c.Format, Empty: c.Empty,
		Series: []Series{{Values: c.Values}}}
	if err := s.check("Values"); err != nil {
		return "", err
	}
	return s.draw(false), nil
}

// SVG draws the chart, or says which field is wrong.
func (c *Stacked) SVG() (template.HTML, error) {
	if err := c.check(""); err != nil {
		return "", err
	}
	return c.draw(true), nil
}

// check validates c; values names the field of the values when it is a Bars' (one series).
func (c *Stacked) check(values string) error {
	if strings.TrimSpace(c.Title) == "" {
		return fmt.Errorf("chart: Title is required")
	}
	if math.IsNaN(c.Max) || math.IsInf(c.Max, 0) || c.Max < 0 {
		return fmt.Errorf("chart: Max is %v, want a finite number, not negative", c.Max)
	}
	if len(c.Series) > len(Palette) {
		return fmt.Errorf("chart: Series has %d entries; at most %d can be told apart", len(c.Series), len(Palette))
	}
	if c.Ticks != nil && len(c.Ticks) != len(c.Labels) {
		return fmt.Errorf("chart: Ticks has %d entries, Labels %d", len(c.Ticks), len(c.Labels))
	}
	for i, s := range c.Series {
		field := values
		if field == "" {
			field = "Series[" + strconv.Itoa(i) + "].Values"
		}
		if len(s.Values) != len(c.Labels) {
			return fmt.Errorf("chart: %s has %d entries, Labels %d", field, len(s.Values), len(c.Labels))
		}
		for j, v := range s.Values {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				return fmt.Errorf("chart: %s[%d] is %v, not a number a bar can show", field, j, v)
			case v < 0:
				return fmt.Errorf("chart: %s[%d] is negative (%v)", field, j, v)
			}
		}
	}
	// A sum of finite values can still overflow.
	for j := range c.Labels {
		if math.IsInf(c.total(j), 0) {
			return fmt.Errorf("chart: the bar of Labels[%d] sums past the largest number", j)
		}
	}
	return nil
}

func (c *Stacked) total(j int) float64 {
	var t float64
	for _, s := range c.Series {
		t += s.Values[j]
	}
	return t
}

func (c *Stacked) format(v float64) string {
	if c.Format != nil {
		return c.Format(v)
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// draw writes the SVG of a checked chart; legend says whether the series are named.
func (c *Stacked) draw(legend bool) template.HTML {
	n := len(c.Labels)
	most := c.Max
	for j := range n {
		most = max(most, c.total(j))
	}
	grid := niceTicks(most)
	top := grid[len(grid)-1]

	// The left margin fits the longest tick label.
	left := 0.0
	for _, g := range grid {
		left = max(left, textWidth(c.format(g)))
	}
	// A label longer than a third of the chart runs off its left edge rather than squeeze the
	// plot away.
	left = min(math.Ceil(left)+10, width/3)
	legendH := 0.0
	var rows [][]int // the legend's series by row
	if legend && len(c.Series) > 0 {
		rows = legendRows(c.Series, width-left)
		legendH = float64(len(rows)) * legendRow
	}
	plotTop := legendH + topPad
	base := plotTop + plotHeight
	height := base + xAxisHeight
	plotW := width - left - 4

	var b strings.Builder
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" viewBox="0 0 `)
	b.WriteString(num(width) + " " + num(height) + `" aria-label="` + esc(c.Title) + `"`)
	b.WriteString(` font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" font-size="` + strconv.Itoa(fontSize) + `">`)
	b.WriteString(`<title>` + esc(c.Title) + `</title>`)
	if c.Desc != "" {
		b.WriteString(`<desc>` + esc(c.Desc) + `</desc>`)
	}
	b.WriteString(`<rect width="` + num(width) + `" height="` + num(height) + `" fill="` + background + `"/>`)

	for r, row := range rows {
		x := left
		y := float64(r)*legendRow + 4
		for _, i := range row {
			name := c.Series[i].Name
			b.WriteString(`<g class="legend">`)
			b.WriteString(`<rect x="` + num(x) + `" y="` + num(y+1) + `" width="12" height="12" fill="` + Palette[i] + `"/>`)
			b.WriteString(`<text x="` + num(x+16) + `" y="` + num(y+11) + `" fill="` + textColor + `">` + esc(name) + `</text></g>`)
			x += legendWidth(name)
		}
	}

	// The grid: its labels right-aligned left of the plot.
	for i, g := range grid {
		y := base - g/top*plotHeight
		if top == 0 {
			y = base
		}
		color := faintGrid
		if i == 0 {
			color = gridColor
		}
		b.WriteString(`<line x1="` + num(left) + `" x2="` + num(left+plotW) + `" y1="` + num(y) + `" y2="` + num(y) + `" stroke="` + color + `" stroke-width="1"/>`)
		b.WriteString(`<text x="` + num(left-6) + `" y="` + num(y+4) + `" text-anchor="end" fill="` + mutedText + `">` + esc(c.format(g)) + `</text>`)
		if top == 0 {
			break
		}
	}

	if n == 0 {
		if c.Empty != "" {
			b.WriteString(`<text x="` + num(left+plotW/2) + `" y="` + num(plotTop+plotHeight/2) + `" text-anchor="middle" fill="` + mutedText + `">` + esc(c.Empty) + `</text>`)
		}
		b.WriteString(`</svg>`)
		return template.HTML(b.String())
	}

	slot := plotW / float64(n)
	barW := slot * 0.7
	if slot < 6 {
		barW = slot - min(1, slot/4) // thin bars: a hairline between them
	}
	// Values are written over the bars only where each fits over its own: otherwise the
	// grid and each bar's title tell them (and the page's table).
	values := n <= maxValueLabels
	for j := range n {
		values = values && textWidth(c.format(c.total(j)))+4 <= slot
	}
	for j := range n {
		x := left + float64(j)*slot + (slot-barW)/2
		total := c.total(j)
		b.WriteString(`<g class="bar"><title>` + esc(c.barTitle(j, total, legend)) + `</title>`)
		y := base
		for i, s := range c.Series {
			v := s.Values[j]
			if v == 0 || top == 0 {
				continue
			}
			h := v / top * plotHeight
			y -= h
			b.WriteString(`<rect x="` + num(x) + `" y="` + num(y) + `" width="` + num(barW) + `" height="` + num(h) + `" fill="` + Palette[i] + `"`)
			if legend {
				// A hairline of background between stacked layers tells them apart
				// where two colors are alike in lightness.
				b.WriteString(` stroke="` + background + `" stroke-width="0.5"`)
			}
			b.WriteString(`/>`)
		}
		if values {
			b.WriteString(`<text x="` + num(x+barW/2) + `" y="` + num(y-5) + `" text-anchor="middle" fill="` + textColor + `">` + esc(c.format(total)) + `</text>`)
		}
		b.WriteString(`</g>`)
	}

	// The category axis.
	every := 1
	if c.Ticks == nil {
		longest := 0.0
		for _, l := range c.Labels {
			longest = max(longest, textWidth(l)+8)
		}
		every = max(1, int(math.Ceil(longest/slot)), (n+maxAxisLabels-1)/maxAxisLabels)
	}
	for j := 0; j < n; j++ {
		label := ""
		if c.Ticks != nil {
			label = c.Ticks[j]
		} else if j%every == 0 {
			label = c.Labels[j]
		}
		if label == "" {
			continue
		}
		x, anchor := left+float64(j)*slot+slot/2, "middle"
		if c.Ticks != nil && slot < textWidth(label) {
			// A tick on a thin bar starts there (a day's first hour), left-aligned.
			x, anchor = left+float64(j)*slot, "start"
			b.WriteString(`<line x1="` + num(x) + `" x2="` + num(x) + `" y1="` + num(base) + `" y2="` + num(base+5) + `" stroke="` + gridColor + `" stroke-width="1"/>`)
		}
		b.WriteString(`<text x="` + num(x) + `" y="` + num(base+18) + `" text-anchor="` + anchor + `" fill="` + textColor + `">` + esc(label) + `</text>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// barTitle is bar j's tooltip: "label: total", with each series' share in a stacked chart.
func (c *Stacked) barTitle(j int, total float64, stacked bool) string {
	t := c.Labels[j] + ": " + c.format(total)
	if !stacked {
		return t
	}
	var parts []string
	for _, s := range c.Series {
		if s.Values[j] != 0 {
			parts = append(parts, s.Name+" "+c.format(s.Values[j]))
		}
	}
	if len(parts) > 0 {
		t += " (" + strings.Join(parts, ", ") + ")"
	}
	return t
}

// legendRows lays the series' legend entries out in rows of at most w units.
func legendRows(series []Series, w float64) [][]int {
	var rows [][]int
	x := w // start a row at once
	for i, s := range series {
		lw := legendWidth(s.Name)
		if x+lw > w && (len(rows) == 0 || len(rows[len(rows)-1]) > 0) {
			rows = append(rows, nil)
			x = 0
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], i)
		x += lw
	}
	return rows
}

func legendWidth(name string) float64 { return 16 + textWidth(name) + 14 }

// textWidth estimates the width of s at fontSize.
func textWidth(s string) float64 { return float64(len([]rune(s))) * charWidth }

// niceTicks returns the grid's values from 0 up to at least most, at a round step (1, 2 or 5
// times a power of ten): [0] when most is 0.
func niceTicks(most float64) []float64 {
	if most <= 0 {
		return []float64{0}
	}
	raw := most / ticks
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow * 10
	for _, m := range []float64{1, 2, 5} {
		if raw <= m*pow {
			step = m * pow
			break
		}
	}
	if step == 0 || math.IsInf(step, 0) { // a subnormal most, or one near the largest float
		return []float64{0, most}
	}
	out := []float64{0}
	for i := 1.0; ; i++ {
		v := i * step
		if math.IsInf(v, 0) {
			return append(out, most)
		}
		out = append(out, v)
		if v >= most || len(out) > 2*ticks+2 {
			return out
		}
	}
}

// num writes a coordinate with one decimal at most: the same bytes for the same chart.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// esc escapes text for an attribute or an element of the SVG; what XML cannot hold (invalid
// UTF-8, control characters) becomes U+FFFD.
func esc(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	return html.EscapeString(s)
}
