package bankfile

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func FuzzDetect(f *testing.F) {
	f.Add(returnFile(341, settled("1", 100)))
	f.Add([]byte(ofxStatement("1", "CREDIT", "F1", "PIX X", "m")))
	f.Add([]byte("id,amountCents,paidOn\n"))
	f.Add([]byte("02RETORNO01COBRANCA" + strings.Repeat(" ", 381) + "\n"))
	f.Fuzz(func(t *testing.T, head []byte) {
		format, err := Detect(head)
		if err != nil {
			var e *Error
			if format != "" || !errors.As(err, &e) || len(e.Problems) != 1 || e.Problems[0].Code != CodeUnknownFormat {
				t.Fatalf("Detect = %q, %#v; want an *Error of code %s", format, err, CodeUnknownFormat)
			}
			return
		}
		if !slices.Contains([]Format{CNAB240, OFX, CSV}, format) {
			t.Fatalf("Detect = %q", format)
		}
		// Only the first DetectBytes count.
		if len(head) > DetectBytes {
			if again, _ := Detect(head[:DetectBytes]); again != format {
				t.Fatalf("Detect of the first %d bytes = %q, of all = %q", DetectBytes, again, format)
			}
		}
		// Whatever is detected, reading never panics and refuses with an *Error.
		if _, err := Read(bytes.NewReader(head), Options{}); err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("Read = %v, want an *Error", err)
			}
		}
	})
}

func FuzzReadCSV(f *testing.F) {
	f.Add("id,amountCents,paidOn,method,currency,reference,customerId,payer\np-1,151530,2026-11-28,pix,BRL,TX1,c-1,\"Acme, Ltda\"\n")
	f.Add("\xef\xbb\xbfamountCents,id,paidOn\r\n1,a,2026-01-01\r\n1,a,2026-01-01\r\n")
	f.Add("id,amountCents,paidOn\n\"p,1,2026-01-01\n")
	f.Fuzz(func(t *testing.T, in string) {
		file, err := readCSV(strings.NewReader(in), "")
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Format != CSV || len(e.Problems) == 0 || len(e.Problems) > 100 {
				t.Fatalf("err = %v, want an *Error of 1..100 problems", err)
			}
			for _, p := range e.Problems {
				if p.Line < 1 || p.Code == "" || p.Message == "" {
					t.Fatalf("a problem without its line, code or message: %+v", p)
				}
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range file.Payments {
			if fe := p.Validate(); fe != nil || p.Source != "csv" || seen[p.SourceRef] {
				t.Fatalf("accepted %+v (%v, repeated %v)", p, fe, seen[p.SourceRef])
			}
			seen[p.SourceRef] = true
		}
	})
}
