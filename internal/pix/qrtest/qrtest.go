// Package qrtest reads QR codes back in tests, with a decoder independent of the encoder that
// drew them (github.com/makiuchi-d/gozxing, a port of ZXing): a code that only our own
// encoder could read would prove nothing.
package qrtest

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/makiuchi-d/gozxing"
	"github.com/makiuchi-d/gozxing/qrcode"
)

// Decode returns the text of the QR code in the PNG image b, failing the test when b is not a
// PNG or holds no QR code the decoder reads.
func Decode(t testing.TB, b []byte) string {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("qrtest: not a PNG image: %v", err)
	}
	return Scan(t, img)
}

// Scan returns the text of the QR code in img, read the way a scanner does, with ZXing's
// detector (no pure-barcode shortcut), failing the test when it reads none.
func Scan(t testing.TB, img image.Image) string {
	t.Helper()
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		t.Fatalf("qrtest: %v", err)
	}
	res, err := qrcode.NewQRCodeReader().Decode(bmp, nil)
	if err != nil {
		t.Fatalf("qrtest: the image holds no QR code the decoder reads: %v", err)
	}
	return res.GetText()
}
