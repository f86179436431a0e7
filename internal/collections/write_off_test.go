package collections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

const writeOff = collections.WriteOffName

// writeOffEnv is env with a pipeline whose step-up demands mfa.
func writeOffEnv(t testing.TB, db store.DB) *env {
	t.Helper()
	e := &env{db: db, now: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}
	keys, err := idempotency.New(db.Dialect(), time.Hour, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	e.p = pipelinetest.Product(t, pipeline.Options{Now: e.clock, DB: db, Keys: keys, Auditor: pipelinetest.Auditor(t, db), StepUp: []string{mfa}})
	return e
}

// controller is a person of the finance team who may write invoices off, signed in a minute
// ago with mfa; edit changes a copy.
func (e *env) controller(edit ...func(*auth.Principal)) *auth.Principal {
	p := &auth.Principal{Subject: "carla", ClientID: "cobranca-cli", Kind: auth.KindHuman, Scopes: []string{collections.WriteOffScope},
		Roles: []string{collections.WriteOffRole}, ACR: mfa, AuthTime: e.clock().Add(-time.Minute)}
	for _, f := range edit {
		f(p)
	}
	return p
}

func (e *env) admin(pr *auth.Principal, args string) pipeline.Result {
	return e.p.Admin(context.Background(), pipeline.Call{Principal: pr, RequestID: "r-admin", Tool: writeOff, Args: json.RawMessage(args)})
}

func (e *env) writeOffEvents(t *testing.T) map[string]int {
	t.Helper()
	return e.events(t, writeOff, "invoice.written_off")
}

const writeOffArgs = `{"invoiceId":"NF-1001","customerId":"C-1","amountCents":123456,"reason":"cliente em recuperação judicial","idempotencyKey":"wo-1"}`

// TestWriteOffByPerson: a stepped-up person with the role and the scope writes an invoice off
// through Admin: the write-off is stored by them and audited invoice.written_off; the same key
// answers the first response byte for byte (replayed, nothing new); another key for the
// invoice is refused with invoice_already_written_off; the key with other arguments is an
// idempotency_conflict; an unknown customer, a bad amount and a missing key are refused naming
// the field. Nothing refused is stored.
func TestWriteOffByPerson(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := writeOffEnv(t, db)
		e.customer(t, padaria)
		first := e.admin(e.controller(), writeOffArgs)
		if first.Kind != pipeline.Complete {
			t.Fatalf("Admin = kind %d %v, want complete", first.Kind, first.Err)
		}
		var got map[string]any
		if err := json.Unmarshal(first.Structured, &got); err != nil {
			t.Fatal(err)
		}
		w, err := writeoffs.ForInvoice(context.Background(), db, "NF-1001")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"writeOffId": w.ID, "invoiceId": "NF-1001", "customerId": "C-1", "amountCents": 123456.0,
			"writtenOffBy": "carla", "writtenOffAt": "2026-07-01T12:00:00Z"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if w.By.Subject != "carla" || w.By.ACR != mfa || !w.By.AuthTime.Equal(e.clock().Add(-time.Minute)) || w.Reason != "cliente em recuperação judicial" {
			t.Errorf("stored %+v", w)
		}
		again := e.admin(e.controller(), writeOffArgs)
		if again.Kind != pipeline.Complete || !bytes.Equal(again.Structured, first.Structured) {
			t.Errorf("the same key again = %d %v %s, want the first answer", again.Kind, again.Err, again.Structured)
		}
		for _, tt := range []struct {
			name, args string
			code       failure.Code
			field      string
		}{
			{"the invoice under another key", strings.Replace(writeOffArgs, "wo-1", "wo-2", 1), writeoffs.CodeAlreadyWrittenOff, "invoiceId"},
			{"the key with another amount", strings.Replace(writeOffArgs, "123456", "1", 1), failure.IdempotencyConflict, "idempotencyKey"},
			{"an unknown customer", `{"invoiceId":"NF-2","customerId":"C-404","amountCents":1,"reason":"x","idempotencyKey":"wo-3"}`, customers.CodeNotFound, "customerId"},
			{"amount zero", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":0,"reason":"x","idempotencyKey":"wo-4"}`, failure.InvalidArguments, "amountCents"},
			{"amount over R$ 10 billion", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":1000000000001,"reason":"x","idempotencyKey":"wo-5"}`, failure.InvalidArguments, "amountCents"},
			{"a fractional amount", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":1.5,"reason":"x","idempotencyKey":"wo-6"}`, failure.InvalidArguments, "amountCents"},
			{"a reason with a bidi control", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":1,"reason":"ok\u202e","idempotencyKey":"wo-7"}`, failure.InvalidArguments, "reason"},
			{"an invoice id with a trailing space", `{"invoiceId":"NF-2 ","customerId":"C-1","amountCents":1,"reason":"x","idempotencyKey":"wo-8"}`, failure.InvalidArguments, "invoiceId"},
			{"no key", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":1,"reason":"x"}`, failure.InvalidArguments, "idempotencyKey"},
			{"an unknown argument", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":1,"reason":"x","idempotencyKey":"wo-9","approved":true}`, failure.InvalidArguments, "approved"},
			{"a dry run", `{"invoiceId":"NF-2","customerId":"C-1","amountCents":1,"reason":"x","idempotencyKey":"wo-10","dryRun":true}`, failure.InvalidArguments, "dryRun"},
		} {
			res := e.admin(e.controller(), tt.args)
			if c, f := failed(res); res.Kind != pipeline.ToolError || c != tt.code || f != tt.field {
				t.Errorf("%s: kind %d %v, want %s on %s", tt.name, res.Kind, res.Err, tt.code, tt.field)
			}
		}
		if n := storetest.Count(t, db, "write_off"); n != 1 {
			t.Errorf("%d write-offs stored, want 1", n)
		}
		events := e.writeOffEvents(t)
		if events["allowed"] != 1 || events["replayed"] != 1 || events["rejected "+string(writeoffs.CodeAlreadyWrittenOff)] != 1 ||
			events["rejected "+string(customers.CodeNotFound)] != 1 || events["rejected "+string(failure.IdempotencyConflict)] != 1 {
			t.Errorf("audit events %v", events)
		}
	})
}

// TestWriteOffRefusals: Admin refuses, before reading the arguments, an agent (even holding
// the role, the scope and a fresh mfa sign-in), no caller, a person without the role, a person
// without the scope, and a person whose sign-in is too old or not mfa (the step-up error names
// what to ask the issuer for); each refusal is audited denied and nothing is stored.
func TestWriteOffRefusals(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := writeOffEnv(t, db)
		e.customer(t, padaria)
		for _, tt := range []struct {
			name string
			pr   *auth.Principal
			kind pipeline.Kind
			code failure.Code
		}{
			{"an agent", e.controller(func(p *auth.Principal) { p.Kind, p.Actor = auth.KindAgent, "ledger-bot" }), pipeline.ToolError, failure.PersonRequired},
			{"no caller", nil, pipeline.ToolError, failure.PersonRequired},
			{"a person without the role", e.controller(func(p *auth.Principal) { p.Roles = []string{collections.ApproverRole} }), pipeline.ToolError, failure.PersonLacksRole},
			{"a person without the scope", e.controller(func(p *auth.Principal) { p.Scopes = []string{"collections:read"} }), pipeline.Denied, failure.InsufficientScope},
			{"a sign-in 6 minutes old", e.controller(func(p *auth.Principal) { p.AuthTime = e.clock().Add(-6 * time.Minute) }), pipeline.ToolError, failure.InsufficientUserAuthentication},
			{"a password sign-in", e.controller(func(p *auth.Principal) { p.ACR = "urn:pwd" }), pipeline.ToolError, failure.InsufficientUserAuthentication},
		} {
			res := e.admin(tt.pr, `not even JSON`)
			if c, _ := failed(res); res.Kind != tt.kind || c != tt.code {
				t.Errorf("%s: kind %d %v, want %d %s", tt.name, res.Kind, res.Err, tt.kind, tt.code)
			}
			if tt.code == failure.InsufficientScope && !slicesEqual(res.Missing, []string{collections.WriteOffScope}) {
				t.Errorf("%s: missing %v", tt.name, res.Missing)
			}
			if tt.code == failure.InsufficientUserAuthentication {
				su, ok := errors.AsType[*auth.StepUpError](res.Err)
				if !ok || !slicesEqual(su.Required.ACRValues, []string{mfa}) || su.Required.MaxAge != 5*time.Minute {
					t.Errorf("%s: step-up error %v, want acr %s within 5 minutes", tt.name, res.Err, mfa)
				}
			}
		}
		if n := storetest.Count(t, db, "write_off"); n != 0 {
			t.Errorf("%d write-offs stored, want 0", n)
		}
		events := e.writeOffEvents(t)
		want := map[string]int{"denied person_required": 2, "denied person_lacks_role": 1, "denied insufficient_scope": 1, "denied insufficient_user_authentication": 2}
		if diff := cmp.Diff(want, events); diff != "" {
			t.Errorf("audit events (-want +got):\n%s", diff)
		}
		if su, ok := e.p.AdminStepUp(writeOff); !ok || su.MaxAge != 5*time.Minute || !slicesEqual(su.ACRValues, []string{mfa}) {
			t.Errorf("AdminStepUp = %+v, %v", su, ok)
		}
	})
}

// TestWriteOffIsNoMCPTool: Do — what the MCP endpoint runs — answers a call of write_off_invoice
// by a person holding everything exactly as a call of a tool that does not exist, and runs
// nothing (the call is audited, rejected unknown_tool); the tool is in AdminContracts, not in
// Contracts; Admin runs no served tool.
func TestWriteOffIsNoMCPTool(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := writeOffEnv(t, db)
		e.customer(t, padaria)
		for _, pr := range []*auth.Principal{e.controller(), e.controller(func(p *auth.Principal) { p.Kind, p.Actor = auth.KindAgent, "ledger-bot" })} {
			call := func(name string) pipeline.Result {
				return e.p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r-mcp", Tool: name, Args: json.RawMessage(writeOffArgs), Client: modern})
			}
			forbidden, unknown := call(writeOff), call("collections.write_off_invoices")
			if forbidden.Kind != pipeline.ProtocolError || !cmp.Equal(forbidden, unknown) {
				t.Errorf("Do(%s) = %+v; a made-up name %+v", writeOff, forbidden, unknown)
			}
		}
		if n := storetest.Count(t, db, "write_off"); n != 0 {
			t.Errorf("%d write-offs stored over Do, want 0", n)
		}
		if events := e.writeOffEvents(t); events["rejected unknown_tool"] != 2 || len(events) != 1 {
			t.Errorf("audit events %v, want the two calls rejected unknown_tool", events)
		}
		for _, c := range e.p.Contracts() {
			if c.Name == writeOff {
				t.Errorf("%s served", writeOff)
			}
		}
		if cs := e.p.AdminContracts(); len(cs) != 1 || cs[0].Name != writeOff {
			t.Errorf("AdminContracts = %v", cs)
		}
		res := e.p.Admin(context.Background(), pipeline.Call{Principal: e.controller(), Tool: set, Args: json.RawMessage(`{}`)})
		if c, _ := failed(res); res.Kind != pipeline.ProtocolError || c != pipeline.CodeUnknownTool {
			t.Errorf("Admin(%s) = %d %v, want unknown_tool", set, res.Kind, res.Err)
		}
	})
}

func slicesEqual(a, b []string) bool { return fmt.Sprint(a) == fmt.Sprint(b) }
