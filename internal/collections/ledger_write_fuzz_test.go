package collections_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// ledgerWriteTools are the tools FuzzLedgerWrites calls, by the fuzzer's first byte.
var ledgerWriteTools = []string{collections.RecordInvoicesName, collections.RecordPaymentName, collections.MatchPaymentName,
	collections.RecordPromiseName, collections.OpenDisputeName, collections.ResolveDisputeName}

// FuzzLedgerWrites: whatever arguments a person's call of a ledger write tool carries, the
// pipeline answers a result its output schema accepts, or a refusal the tool's contract lists
// (invalid_arguments naming a field) — never a panic, never an internal error.
func FuzzLedgerWrites(f *testing.F) {
	for i, s := range []string{
		`{"idempotencyKey":"k","invoices":[{"invoiceId":"NF-9","customerId":"C-1","amountCents":1,"dueDate":"2026-06-20","void":true}]}`,
		`{"idempotencyKey":"k","transactionId":"E1","amountCents":100000,"paidOn":"2026-06-30","method":"pix","reference":"TXNF1"}`,
		`{"idempotencyKey":"k","paymentId":"pay_aaaaaaaaaaaaaaaaaaaaaaaaaa","allocations":[{"invoiceId":"NF-1","amountCents":1}]}`,
		`{"idempotencyKey":"k","invoiceId":"NF-2","amountCents":100,"promisedFor":"2026-07-02","channel":"chat"}`,
		`{"idempotencyKey":"k","invoiceId":"NF-2","reason":"pricing","note":"caro"}`,
		`{"idempotencyKey":"k","invoiceId":"NF-2","outcome":"upheld","note":"ok"}`,
		`{"idempotencyKey":"k","invoices":[{"invoiceId":"NF-1","customerId":"C-1","amountCents":1e3,"dueDate":"2026-02-29"}]}`,
		`{"idempotencyKey":"k","transactionId":"\u202e","amountCents":-1,"paidOn":"2026-13-01","method":"","currency":null}`,
	} {
		f.Add(byte(i%len(ledgerWriteTools)), []byte(s))
	}
	for _, s := range []string{`[]`, `null`, `{}`, `{"x":1}`, `"`, `{"invoiceId":"\ud800"}`} {
		f.Add(byte(0), []byte(s))
		f.Add(byte(2), []byte(s))
	}
	db := storetest.SQLite(f)
	e := newEnv(f, db)
	e.seedLedger(f, ledgerInvoices...)
	contracts := map[string]pipeline.Tool{}
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		f.Fatal(err)
	}
	for _, tool := range tools {
		contracts[tool.Contract.Name] = tool
	}
	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		tool := ledgerWriteTools[int(which)%len(ledgerWriteTools)]
		res := e.p.Do(context.Background(), pipeline.Call{Principal: clerk, RequestID: "fuzz", Tool: tool, Args: body, Client: modern})
		switch res.Kind {
		case pipeline.Complete:
			if !json.Valid(res.Structured) {
				t.Fatalf("%s(%q) answered %s", tool, body, res.Structured)
			}
		case pipeline.ToolError:
			switch {
			case res.Err.Code == failure.InvalidArguments && res.Err.Field == "":
				t.Fatalf("%s(%q) = %v: invalid_arguments names no field", tool, body, res.Err)
			case res.Err.Code == failure.Internal || !contracts[tool].Contract.Allows(res.Err.Code):
				t.Fatalf("%s(%q) = %v", tool, body, res.Err)
			}
		default:
			t.Fatalf("%s(%q) = kind %d %v", tool, body, res.Kind, res.Err)
		}
	})
}
