package web

import (
	"bytes"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/failure"
)

// FuzzImportForm: any body after the import form's token is read or refused (invalid_arguments
// naming a field, or file_too_large), never a panic; what is read is one of the form's kinds
// and a file within the bound.
func FuzzImportForm(f *testing.F) {
	const boundary, max = "B0undary", 1 << 10
	form := func(fields ...[2]string) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		if err := mw.SetBoundary(boundary); err != nil {
			f.Fatal(err)
		}
		for _, fl := range fields {
			var w interface{ Write([]byte) (int, error) }
			var err error
			if fl[0] == "file" {
				w, err = mw.CreateFormFile("file", "a.csv")
			} else {
				w, err = mw.CreateFormField(fl[0])
			}
			if err != nil {
				f.Fatal(err)
			}
			if _, err := w.Write([]byte(fl[1])); err != nil {
				f.Fatal(err)
			}
		}
		if err := mw.Close(); err != nil {
			f.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, b := range [][]byte{
		form([2]string{"kind", "invoices"}, [2]string{"file", "invoiceId,customerId,amountCents,dueDate\n"}),
		form([2]string{"file", "id,amountCents,paidOn\n"}, [2]string{"kind", "payments"}),
		form([2]string{"kind", "payments"}),
		form([2]string{"kind", "invoices"}, [2]string{"kind", "payments"}, [2]string{"file", "x"}),
		form([2]string{"kind", "invoices"}, [2]string{"file", strings.Repeat("x", max+1)}),
		form([2]string{"other", "1"}),
		[]byte("--B0undary\r\nContent-Disposition: form-data; name=\"kind\"\r\n\r\ninvoices"),
		nil,
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, fe := readImportForm(multipart.NewReader(bytes.NewReader(body), boundary), max)
		if fe != nil {
			switch {
			case fe.Code == CodeFileTooLarge && fe.Field == "file":
			case fe.Code == failure.InvalidArguments && fe.Message != "" && len(fe.Field) <= 66:
			default:
				t.Fatalf("%q: refused as %+v, want invalid_arguments naming a field, or file_too_large", body, fe)
			}
			return
		}
		if got.Kind != importInvoices && got.Kind != importPayments || len(got.Data) > max {
			t.Fatalf("%q: read as kind %q with %d bytes, want a kind of the form and at most %d", body, got.Kind, len(got.Data), max)
		}
	})
}
