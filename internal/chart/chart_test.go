package chart_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/chart"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// brl writes cents as a Brazilian finance team reads them: R$ 1.234,56.
func brl(cents float64) string {
	c := int64(math.Round(cents))
	s := strconv.FormatInt(c/100, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte('.')
		}
		b.WriteRune(r)
	}
	return fmt.Sprintf("R$ %s,%02d", b.String(), c%100)
}

func count(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

func aging() *chart.Bars {
	return &chart.Bars{
		Title:  "Valor em aberto por faixa de atraso",
		Desc:   "Em 02/12/2026: a vencer R$ 120.000,00; 1–30 dias R$ 45.600,50; 31–60 R$ 12.000,00; 61–90 R$ 0,00; mais de 90 R$ 98.765,43.",
		Labels: []string{"A vencer", "1–30 dias", "31–60 dias", "61–90 dias", "90+ dias"},
		Values: []float64{12_000_000, 4_560_050, 1_200_000, 0, 9_876_543},
		Format: brl,
	}
}

func weekly() *chart.Bars {
	c := &chart.Bars{Title: "Recebido por semana", Desc: "Pagamentos alocados, por semana da data de pagamento, 12 semanas.", Format: brl}
	start := time.Date(2026, 9, 7, 0, 0, 0, 0, time.UTC)
	for i := range 12 {
		c.Labels = append(c.Labels, start.AddDate(0, 0, 7*i).Format("02/01"))
		c.Values = append(c.Values, float64((i*7919)%23*100_000+i*1234))
	}
	return c
}

// hourly is one risk tier's calls by outcome per hour over 7 days, day ticks at each day's
// first hour, on a scale shared with the other tiers' (Max).
func hourly() *chart.Stacked {
	c := &chart.Stacked{Title: "Risco baixo: chamadas por hora, 7 dias, por resultado", Desc: "Chamadas de ferramentas por hora, empilhadas por resultado.", Format: count, Max: 60}
	outcomes := []string{"Permitidas", "Aguardando aprovação", "Negadas", "Falharam"}
	for _, t := range outcomes {
		c.Series = append(c.Series, chart.Series{Name: t})
	}
	start := time.Date(2026, 11, 25, 13, 0, 0, 0, time.UTC)
	for h := range 7 * 24 {
		at := start.Add(time.Duration(h) * time.Hour)
		c.Labels = append(c.Labels, at.Format("02/01 15h"))
		tick := ""
		if at.Hour() == 0 {
			tick = at.Format("02/01")
		}
		c.Ticks = append(c.Ticks, tick)
		for i := range c.Series {
			v := float64((h*31+i*17)%40) / float64(i+1)
			if at.Hour() < 7 {
				v = 0
			}
			c.Series[i].Values = append(c.Series[i].Values, math.Floor(v))
		}
	}
	return c
}

func TestGolden(t *testing.T) {
	bars := map[string]*chart.Bars{
		"aging":      aging(),
		"weekly":     weekly(),
		"empty":      {Title: "Recebido por semana", Empty: "Sem dados", Format: brl},
		"zeros":      {Title: "Zero", Labels: []string{"a", "b"}, Values: []float64{0, 0}},
		"escaped":    {Title: `<script>alert("x")</script> & 'co'`, Desc: "</desc><script>", Labels: []string{"<b>", "a\x01b"}, Values: []float64{1, 2}},
		"defaultfmt": {Title: "Default format", Labels: []string{"x"}, Values: []float64{0.25}},
	}
	stacked := map[string]*chart.Stacked{"hourly": hourly()}
	for name, c := range bars {
		t.Run(name, func(t *testing.T) {
			got, err := c.SVG()
			if err != nil {
				t.Fatal(err)
			}
			check(t, name, []byte(got))
		})
	}
	for name, c := range stacked {
		t.Run(name, func(t *testing.T) {
			got, err := c.SVG()
			if err != nil {
				t.Fatal(err)
			}
			check(t, name, []byte(got))
		})
	}
}

// check holds svg to the rules every chart keeps, then to its golden file.
func check(t *testing.T, name string, svg []byte) {
	t.Helper()
	wellFormed(t, svg)
	path := filepath.Join("testdata", name+".svg")
	if *update {
		if err := os.WriteFile(path, svg, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, svg) {
		t.Errorf("%s: the SVG differs from the golden file; if the change is intended, run go test -update\ngot:\n%s", path, svg)
	}
}

// wellFormed fails t unless svg is one XML <svg> element, an image with an accessible name,
// a <title> first, and nothing the pages' CSP would refuse or a browser would run: no style
// element or attribute, no script, no event handler, no link out.
func wellFormed(t testing.TB, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	depth, elements := 0, 0
	var first []string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			elements++
			if elements <= 2 {
				first = append(first, tok.Name.Local)
			}
			if depth == 0 && elements > 1 {
				t.Fatalf("more than one root element")
			}
			depth++
			switch tok.Name.Local {
			case "style", "script", "foreignObject", "a", "image", "use":
				t.Errorf("the SVG has a <%s> element", tok.Name.Local)
			}
			attrs := map[string]string{}
			for _, a := range tok.Attr {
				attrs[a.Name.Local] = a.Value
				switch a.Name.Local {
				case "x", "y", "x1", "x2", "y1", "y2", "width", "height":
					if v, err := strconv.ParseFloat(a.Value, 64); err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
						t.Errorf("<%s %s=%q>: want a finite coordinate, not negative", tok.Name.Local, a.Name.Local, a.Value)
					}
				}
				if a.Name.Local == "style" || strings.HasPrefix(a.Name.Local, "on") || a.Name.Local == "href" {
					t.Errorf("<%s> has the attribute %s", tok.Name.Local, a.Name.Local)
				}
			}
			if tok.Name.Local == "svg" {
				if attrs["role"] != "img" || attrs["aria-label"] == "" || attrs["viewBox"] == "" {
					t.Errorf("<svg> role=%q aria-label=%q viewBox=%q: want img, a name, a viewBox", attrs["role"], attrs["aria-label"], attrs["viewBox"])
				}
			}
		case xml.EndElement:
			depth--
		}
	}
	if len(first) < 2 || first[0] != "svg" || first[1] != "title" {
		t.Errorf("the SVG begins %v, want [svg title]", first)
	}
}

func TestRefusesBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		svg  func() error
		want string
	}{
		{"no title", func() error { _, err := (&chart.Bars{Labels: []string{"a"}, Values: []float64{1}}).SVG(); return err }, "Title"},
		{"NaN", func() error {
			_, err := (&chart.Bars{Title: "t", Labels: []string{"a", "b"}, Values: []float64{1, math.NaN()}}).SVG()
			return err
		}, "Values[1] is NaN"},
		{"infinite", func() error {
			_, err := (&chart.Bars{Title: "t", Labels: []string{"a"}, Values: []float64{math.Inf(1)}}).SVG()
			return err
		}, "Values[0] is +Inf"},
		{"negative", func() error {
			_, err := (&chart.Bars{Title: "t", Labels: []string{"a"}, Values: []float64{-1}}).SVG()
			return err
		}, "Values[0] is negative"},
		{"lengths", func() error {
			_, err := (&chart.Bars{Title: "t", Labels: []string{"a"}, Values: []float64{1, 2}}).SVG()
			return err
		}, "Values has 2 entries, Labels 1"},
		{"ticks", func() error {
			_, err := (&chart.Bars{Title: "t", Labels: []string{"a"}, Values: []float64{1}, Ticks: []string{}}).SVG()
			return err
		}, "Ticks has 0 entries, Labels 1"},
		{"series value", func() error {
			_, err := (&chart.Stacked{Title: "t", Labels: []string{"a"}, Series: []chart.Series{{Name: "x", Values: []float64{1}}, {Name: "y", Values: []float64{math.NaN()}}}}).SVG()
			return err
		}, "Series[1].Values[0] is NaN"},
		{"overflowing sum", func() error {
			_, err := (&chart.Stacked{Title: "t", Labels: []string{"a"}, Series: []chart.Series{{Values: []float64{math.MaxFloat64}}, {Values: []float64{math.MaxFloat64}}}}).SVG()
			return err
		}, "Labels[0] sums past"},
		{"NaN max", func() error {
			_, err := (&chart.Stacked{Title: "t", Max: math.NaN()}).SVG()
			return err
		}, "Max is NaN"},
		{"negative max", func() error {
			_, err := (&chart.Stacked{Title: "t", Max: -1}).SVG()
			return err
		}, "Max is -1"},
		{"too many series", func() error {
			_, err := (&chart.Stacked{Title: "t", Series: make([]chart.Series, len(chart.Palette)+1)}).SVG()
			return err
		}, "Series has 9 entries"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.svg()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("SVG() error = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// The same chart gives the same bytes.
func TestDeterministic(t *testing.T) {
	a, err := hourly().SVG()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, _ := hourly().SVG()
		if a != b {
			t.Fatal("two renderings of one chart differ")
		}
	}
}

// Bars scale to the tallest: the bar of the largest value is the tallest, a zero draws none.
func TestBarHeights(t *testing.T) {
	svg, err := aging().SVG()
	if err != nil {
		t.Fatal(err)
	}
	var heights []float64
	d := xml.NewDecoder(strings.NewReader(string(svg)))
	inBar := false
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		if s, ok := tok.(xml.StartElement); ok {
			if s.Name.Local == "g" && attr(s, "class") == "bar" {
				inBar = true
				heights = append(heights, 0)
			}
			if inBar && s.Name.Local == "rect" {
				h, _ := strconv.ParseFloat(attr(s, "height"), 64)
				heights[len(heights)-1] = h
			}
		}
		if e, ok := tok.(xml.EndElement); ok && e.Name.Local == "g" {
			inBar = false
		}
	}
	// 12 000 000 is the tallest; the grid tops at 15 000 000 (step 5 000 000): 180*12/15.
	want := []float64{144, 54.7, 14.4, 0, 118.5}
	if fmt.Sprint(heights) != fmt.Sprint(want) {
		t.Errorf("bar heights = %v, want %v", heights, want)
	}
}

// Small multiples share a scale: a chart given Max draws its bars against it, as the chart of
// the largest bar draws its own; without it, a chart scales to its own tallest.
func TestSharedScale(t *testing.T) {
	small := func(most float64) *chart.Stacked {
		return &chart.Stacked{Title: "t", Labels: []string{"a", "b"}, Max: most,
			Series: []chart.Series{{Name: "x", Values: []float64{10, 15}}, {Name: "y", Values: []float64{0, 5}}}}
	}
	for _, tc := range []struct {
		max  float64
		want []float64 // the rects' heights, bottom layer first
	}{
		{0, []float64{90, 135, 45}}, // the grid tops at 20
		{40, []float64{45, 67.5, 22.5}},
		{15, []float64{90, 135, 45}}, // below the chart's own tallest: no effect
	} {
		svg, err := small(tc.max).SVG()
		if err != nil {
			t.Fatal(err)
		}
		var heights []float64
		d := xml.NewDecoder(strings.NewReader(string(svg)))
		inBar := false
		for {
			tok, err := d.Token()
			if err != nil {
				break
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if tok.Name.Local == "g" && attr(tok, "class") == "bar" {
					inBar = true
				}
				if inBar && tok.Name.Local == "rect" {
					h, _ := strconv.ParseFloat(attr(tok, "height"), 64)
					heights = append(heights, h)
				}
			case xml.EndElement:
				if tok.Name.Local == "g" {
					inBar = false
				}
			}
		}
		if fmt.Sprint(heights) != fmt.Sprint(tc.want) {
			t.Errorf("Max %v: bar heights = %v, want %v", tc.max, heights, tc.want)
		}
	}
}

func attr(s xml.StartElement, name string) string {
	for _, a := range s.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// WCAG 2.2: text 4.5:1 (1.4.3), bars and the axis 3:1 (1.4.11), against the background.
func TestContrast(t *testing.T) {
	for _, c := range chart.Palette {
		if r := contrast(c, chart.Background); r < 3 {
			t.Errorf("palette color %s: contrast %.2f:1 against %s, want at least 3:1", c, r, chart.Background)
		}
	}
	for _, c := range []string{chart.TextColor, chart.MutedText} {
		if r := contrast(c, chart.Background); r < 4.5 {
			t.Errorf("text color %s: contrast %.2f:1, want at least 4.5:1", c, r)
		}
	}
	if r := contrast(chart.GridColor, chart.Background); r < 3 {
		t.Errorf("axis color %s: contrast %.2f:1, want at least 3:1", chart.GridColor, r)
	}
	// The oracle itself: black on white is 21:1.
	if r := contrast("#000000", "#ffffff"); math.Abs(r-21) > 1e-9 {
		t.Errorf("Contrast(black, white) = %v, want 21", r)
	}
}

// contrast is WCAG 2.2's contrast ratio of two #rrggbb colors.
func contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)
}

func luminance(hex string) float64 {
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil || len(hex) != 7 {
		panic("not a #rrggbb color: " + hex)
	}
	channel := func(c uint64) float64 {
		s := float64(c) / 255
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*channel(v>>16&0xff) + 0.7152*channel(v>>8&0xff) + 0.0722*channel(v&0xff)
}

func FuzzSVG(f *testing.F) {
	f.Add("t", "a\x00b", 1.0, 2.0, -3.0, uint8(2))
	f.Add("", "", math.NaN(), math.Inf(1), 0.0, uint8(0))
	f.Add("<t>", "&", 1e308, 1e308, 5e-324, uint8(9))
	f.Add("x", "\xff", 0.0, 0.0, 0.0, uint8(3))
	f.Fuzz(func(t *testing.T, title, label string, a, b, c float64, series uint8) {
		vals := []float64{a, b, c}
		labels := []string{label, label + "2", ""}
		st := &chart.Stacked{Title: title, Labels: labels}
		for i := range int(series % 10) {
			st.Series = append(st.Series, chart.Series{Name: label, Values: vals[:]})
			vals = []float64{b, c, a + float64(i)}
		}
		svg, err := st.SVG()
		ok := strings.TrimSpace(title) != "" && len(st.Series) <= len(chart.Palette)
		for _, s := range st.Series {
			for _, v := range s.Values {
				ok = ok && !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0
			}
		}
		if ok && err != nil {
			var sums bool
			for j := range labels {
				var s float64
				for _, x := range st.Series {
					s += x.Values[j]
				}
				sums = sums || math.IsInf(s, 0)
			}
			if !sums {
				t.Fatalf("SVG() refused good input: %v", err)
			}
		}
		if !ok && err == nil {
			t.Fatalf("SVG() accepted bad input %+v", st)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "chart: ") || errors.Unwrap(err) != nil {
				t.Fatalf("error %q: want a plain chart error", err)
			}
			return
		}
		wellFormed(t, []byte(svg))
	})
}

// BenchmarkSVG: the week of hours, 168 bars of four tiers, and the aging's five bars.
func BenchmarkSVG(b *testing.B) {
	h, a := hourly(), aging()
	b.Run("hourly", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.SVG(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("aging", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.SVG(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
