package pix

import "testing"

// A bulk send renders a code and its QR for each of thousands of drafts.
// Code checks its Merchant again each time: a CPF or numeric CNPJ key
// costs brdoc's check (it compiles a regexp per call), the others not.
func BenchmarkCode(b *testing.B) {
	for _, key := range []string{"123e4567-e12b-12d1-a456-426655440000", "12.ABC.345/01DE-35", "123.456.789-09"} {
		m, err := NewMerchant(key, "Fulano de Tal Comercio", "SAO PAULO")
		if err != nil {
			b.Fatal(err)
		}
		b.Run(string(m.Key.Kind), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Code(Charge{AmountCents: 123456, TxID: "D2K7QXJ3M5N8P1R4T6V9W2Y5A"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQRPNG(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := QRPNG(bacenExample); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkQRSVG(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := QRSVG(bacenExample); err != nil {
			b.Fatal(err)
		}
	}
}
