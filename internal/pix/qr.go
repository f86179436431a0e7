package pix

import (
	"fmt"
	"strconv"
	"strings"

	"rsc.io/qr"
)

// pngScale is the PNG's pixels per module: a code of about 150 characters
// is a 41-module symbol, 245 pixels wide with its quiet zone, which mail
// clients show at a size phone cameras read from a screen.
const pngScale = 5

// QRPNG draws code as a QR symbol in a black-and-white PNG, error
// correction level M (it still reads with about 15% of the symbol lost:
// a smudged screen, a fold in a printout), 5 pixels per module with the 4-module quiet zone around it.
func QRPNG(code string) ([]byte, error) {
	c, err := encode(code)
	if err != nil {
		return nil, err
	}
	c.Scale = pngScale
	return c.PNG(), nil
}

// QRSVG draws code as an <svg> element for HTML pages under a strict
// Content-Security-Policy: one <path> of the dark modules, a viewBox in
// modules with the quiet zone, and neither style attribute nor script. The
// page shows it on a light background.
func QRSVG(code string) (string, error) {
	c, err := encode(code)
	if err != nil {
		return "", err
	}
	side := c.Size + 8
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" shape-rendering="crispEdges"><path fill="#000" d="`, side, side, side*pngScale, side*pngScale)
	for y := range c.Size {
		for x := 0; x < c.Size; {
			if !c.Black(x, y) {
				x++
				continue
			}
			run := 1
			for c.Black(x+run, y) {
				run++
			}
			// A run of dark modules is one rectangle, one module high.
			b.WriteString("M" + strconv.Itoa(x+4) + " " + strconv.Itoa(y+4) + "h" + strconv.Itoa(run) + "v1h-" + strconv.Itoa(run) + "z")
			x += run
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String(), nil
}

func encode(code string) (*qr.Code, error) {
	if code == "" {
		return nil, fmt.Errorf("pix: no code to draw")
	}
	c, err := qr.Encode(code, qr.M)
	if err != nil {
		return nil, fmt.Errorf("pix: drawing the QR code: %w", err)
	}
	return c, nil
}
