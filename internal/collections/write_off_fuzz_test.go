package collections_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// FuzzAdminWriteOff: whatever body the admin API hands over, Admin answers a write-off that
// was stored as its arguments say, or a refusal the contract lists (invalid_arguments naming a
// field, an unknown customer, an invoice already written off, a key reused with other
// arguments) — never a panic, never an internal error.
func FuzzAdminWriteOff(f *testing.F) {
	for _, s := range []string{
		writeOffArgs,
		`{"invoiceId":"NF-2","customerId":"C-1","amountCents":1,"reason":"x","idempotencyKey":"k"}`,
		`{"invoiceId":"NF-3","customerId":"C-1","amountCents":1e3,"reason":"x","idempotencyKey":"k2"}`,
		`{"invoiceId":"NF-4","customerId":"C-1","amountCents":1000000000000,"reason":"x","idempotencyKey":"k3","idempotencyKey":"k4"}`,
		`{"invoiceId":" NF","customerId":"C-404","amountCents":-1,"reason":"\u202e","idempotencyKey":""}`,
		`{"invoiceId":null,"customerId":1,"amountCents":"1","reason":[],"idempotencyKey":{}}`,
		`[]`, `null`, `{}`, `{"x":1}`, `"`, `{"invoiceId":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	db := storetest.SQLite(f)
	e := writeOffEnv(f, db)
	e.customer(f, padaria)
	f.Fuzz(func(t *testing.T, body []byte) {
		res := e.p.Admin(context.Background(), pipeline.Call{Principal: e.controller(), RequestID: "fuzz", Tool: writeOff, Args: body})
		switch res.Kind {
		case pipeline.Complete:
			var got struct {
				WriteOffID, InvoiceID, CustomerID string
				AmountCents                       int64
			}
			if err := json.Unmarshal(res.Structured, &got); err != nil {
				t.Fatalf("Admin(%q) answered %s: %v", body, res.Structured, err)
			}
			w, err := writeoffs.ForInvoice(context.Background(), db, got.InvoiceID)
			if err != nil || w.ID != got.WriteOffID || w.CustomerID != got.CustomerID || w.AmountCents != got.AmountCents || w.Request.Validate() != nil {
				t.Fatalf("Admin(%q) answered %s; stored %+v, %v", body, res.Structured, w, err)
			}
		case pipeline.ToolError:
			switch res.Err.Code {
			case failure.InvalidArguments:
				if res.Err.Field == "" {
					t.Fatalf("Admin(%q) = %v: invalid_arguments names no field", body, res.Err)
				}
			case customers.CodeNotFound, writeoffs.CodeAlreadyWrittenOff, failure.IdempotencyConflict:
			default:
				t.Fatalf("Admin(%q) = %v", body, res.Err)
			}
		default:
			t.Fatalf("Admin(%q) = kind %d %v", body, res.Kind, res.Err)
		}
	})
}
