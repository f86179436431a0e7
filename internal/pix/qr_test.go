package pix

import (
	"bytes"
	"encoding/xml"
	"errors"
	"image"
	"image/color"
	"image/png"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/pix/qrtest"
)

// testCodes are codes of every kind of key, at the longest (a 77-character
// e-mail, 25-character name and txid, the largest amount) and the shortest.
func testCodes(t *testing.T) []string {
	var out []string
	for _, tt := range []struct {
		key, name, city string
		c               Charge
	}{
		{"123e4567-e12b-12d1-a456-426655440000", "Fulano de Tal", "BRASILIA", Charge{}},
		{strings.Repeat("a", 65) + "@example.com", strings.Repeat("N", 25), strings.Repeat("C", 15), Charge{999_999_999_999, strings.Repeat("T", 25)}},
		{"12.ABC.345/01DE-35", "Loja & <Cia>", "SAO PAULO", Charge{123456, "D2K7QX"}},
		{"123.456.789-09", "F", "C", Charge{1, "A"}},
		{"+5511987654321", "Fulano", "RIO", Charge{1050, ""}},
	} {
		m, err := NewMerchant(tt.key, tt.name, tt.city)
		if err != nil {
			t.Fatal(err)
		}
		code, err := m.Code(tt.c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, code)
	}
	return out
}

func TestQRPNGDecodesBack(t *testing.T) {
	for _, code := range testCodes(t) {
		b, err := QRPNG(code)
		if err != nil {
			t.Fatalf("QRPNG(%q): %v", code, err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("QRPNG(%q) is not a PNG: %v", code, err)
		}
		if got := qrtest.Scan(t, img); got != code {
			t.Errorf("QRPNG(%q) scans as %q", code, got)
		}
		// 5 pixels a module, the symbol and its 4-module quiet zone on each side.
		if w := img.Bounds().Dx(); w%5 != 0 || (w/5-8-17)%4 != 0 || img.Bounds().Dy() != w {
			t.Errorf("QRPNG(%q) is %v: want a square of 5 px modules of a QR version with its quiet zone", code, img.Bounds())
		}
	}
	if _, err := QRPNG(""); err == nil {
		t.Error("QRPNG(\"\") = nil error")
	}
}

// The SVG is well-formed XML of one <svg> and one <path>, with no style,
// script or event attribute; drawn module by module it scans back as the
// code.
func TestQRSVG(t *testing.T) {
	for _, code := range testCodes(t) {
		s, err := QRSVG(code)
		if err != nil {
			t.Fatalf("QRSVG(%q): %v", code, err)
		}
		dec := xml.NewDecoder(strings.NewReader(s))
		var elems []string
		var d string
		side := 0
		for {
			tok, err := dec.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("QRSVG(%q) is not XML: %v\n%s", code, err, s)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				elems = append(elems, tok.Name.Local)
				for _, a := range tok.Attr {
					name := strings.ToLower(a.Name.Local)
					if name == "style" || strings.HasPrefix(name, "on") || name == "href" {
						t.Errorf("QRSVG: <%s> has the attribute %s", tok.Name.Local, a.Name.Local)
					}
					switch {
					case tok.Name.Local == "path" && name == "d":
						d = a.Value
					case tok.Name.Local == "svg" && name == "viewbox":
						f := strings.Fields(a.Value)
						if len(f) != 4 || f[0] != "0" || f[1] != "0" || f[2] != f[3] {
							t.Errorf("QRSVG: viewBox %q", a.Value)
						}
						side, _ = strconv.Atoi(f[2])
					}
				}
			case xml.CharData:
				if strings.TrimSpace(string(tok)) != "" {
					t.Errorf("QRSVG: text %q", tok)
				}
			case xml.ProcInst, xml.Directive, xml.Comment:
				t.Errorf("QRSVG: %T in the SVG", tok)
			}
		}
		if strings.Join(elems, " ") != "svg path" {
			t.Fatalf("QRSVG(%q) has the elements %v, want svg path", code, elems)
		}
		if got := qrtest.Scan(t, rasterize(t, side, d)); got != code {
			t.Errorf("QRSVG(%q) scans as %q", code, got)
		}
	}
}

var run = regexp.MustCompile(`^M(\d+) (\d+)h(\d+)v1h-(\d+)z`)

// rasterize draws the path's one-module-high rectangles at 4 px a module,
// white around them.
func rasterize(t *testing.T, side int, d string) image.Image {
	const px = 4
	img := image.NewGray(image.Rect(0, 0, side*px, side*px))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for d != "" {
		m := run.FindStringSubmatch(d)
		if m == nil || m[3] != m[4] {
			t.Fatalf("path data %.40q… is not M x y h n v1 h-n z runs", d)
		}
		x, _ := strconv.Atoi(m[1])
		y, _ := strconv.Atoi(m[2])
		n, _ := strconv.Atoi(m[3])
		for dx := range n * px {
			for dy := range px {
				img.SetGray(x*px+dx, y*px+dy, color.Gray{})
			}
		}
		d = d[len(m[0]):]
	}
	return img
}
