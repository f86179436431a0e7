package collections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
)

var (
	scopes = []string{"collections:read", "customers:write", "reminders:write"}
	// human is a person's token; agent an AI agent acting for the same person.
	human  = &auth.Principal{Subject: "ana", ClientID: "ops-console", Kind: auth.KindHuman, Scopes: scopes}
	agent  = &auth.Principal{Subject: "ana", ClientID: "assistant", Actor: "agent-7", Kind: auth.KindAgent, Scopes: scopes}
	modern = pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, ElicitationForm: true}
	legacy = pipeline.Client{Protocol: "2025-11-25"}
)

// do is a call of tool by pr from the client cl.
func (e *env) do(pr *auth.Principal, cl pipeline.Client, tool, args string) pipeline.Result {
	return e.p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r-1", Tool: tool, Args: json.RawMessage(args), Client: cl})
}

// confirmed is a call of a high-tier tool by the agent pr that the person
// confirms in band: ask is the first answer (input_required), done the
// retry's, carrying the person's acceptance.
func (e *env) confirmed(t *testing.T, pr *auth.Principal, tool, args string) (ask, done pipeline.Result) {
	t.Helper()
	ask = e.do(pr, modern, tool, args)
	if ask.Kind != pipeline.InputRequired {
		t.Fatalf("%s by an agent: kind %d %v, want input_required", tool, ask.Kind, ask.Err)
	}
	accept, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"confirm": true}})
	done = e.p.Do(context.Background(), pipeline.Call{Principal: pr, RequestID: "r-2", Tool: tool, Args: json.RawMessage(args),
		Client: modern, State: ask.State, Responses: map[string]json.RawMessage{"confirm": accept}})
	return ask, done
}

func (e *env) customer(t testing.TB, r customers.Record) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := customers.Upsert(ctx, tx, r, e.clock().Add(-time.Hour))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) get(t *testing.T, id string) customers.Customer {
	t.Helper()
	c, err := customers.Get(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// draft writes an open reminder draft for the customer, as prepare_reminder does.
func (e *env) draft(t *testing.T, customerID, name, invoiceID string) reminders.Record {
	t.Helper()
	tmpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var rec reminders.Record
	err = e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		rec, _, err = reminders.Prepare(ctx, tx, tmpl, reminders.Request{CustomerID: customerID, To: reminders.Recipient{Name: name, Email: e.get(t, customerID).Email},
			Tone: reminders.Friendly, Language: reminders.PortugueseBR, CreatedBy: "ana",
			Invoices: []reminders.Invoice{{ID: invoiceID, DueDate: "2026-11-01", AmountCents: 123456}}}, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func failed(res pipeline.Result) (failure.Code, string) {
	if res.Err == nil {
		return "", ""
	}
	return res.Err.Code, res.Err.Field
}

const set = collections.SetContactStatusName

var padaria = customers.Record{ID: "C-1", Name: `Padaria "São João" {{.Secret}}`, Email: "financeiro@padaria.example"}

// TestSetContactStatusByPerson: a person's call runs without confirmation:
// the status, reason, who and when are stored; setting it again answers
// changed false, writes nothing and is audited unchanged.
func TestSetContactStatusByPerson(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		res := e.do(human, modern, set, `{"customerId":"C-1","status":"paused","pausedUntil":"2026-12-15","reason":"renegotiating","idempotencyKey":"k-1"}`)
		want := map[string]any{"customerId": "C-1", "previousStatus": "contactable", "status": "paused", "pausedUntil": "2026-12-15", "changed": true, "draftsDiscarded": 0.0}
		if diff := cmp.Diff(want, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("set paused (-want +got):\n%s", diff)
		}
		c := e.get(t, "C-1")
		if c.Status != customers.Paused || c.PausedUntil != "2026-12-15" || c.Reason != "renegotiating" || c.SetBy != "ana" || c.SetByActor != "" || !c.SetAt.Equal(e.clock()) {
			t.Errorf("stored %+v, want paused until 2026-12-15, reason, set by ana at %v", c, e.clock())
		}

		// The same status and date again, with another key and reason.
		res = e.do(human, modern, set, `{"customerId":"C-1","status":"paused","pausedUntil":"2026-12-15","reason":"again","idempotencyKey":"k-2"}`)
		want = map[string]any{"customerId": "C-1", "previousStatus": "paused", "status": "paused", "pausedUntil": "2026-12-15", "changed": false, "draftsDiscarded": 0.0}
		if diff := cmp.Diff(want, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("set the same status (-want +got):\n%s", diff)
		}
		if again := e.get(t, "C-1"); !cmp.Equal(again, c) {
			t.Errorf("after the same status: %+v, want %+v (nothing written)", again, c)
		}
		if got, want := pipelinetest.Audited(t, e.db, set), map[string]int{"allowed": 1, "unchanged": 1}; !cmp.Equal(got, want) {
			t.Errorf("audit outcomes %v, want %v", got, want)
		}

		// Another date is a change.
		res = e.do(human, modern, set, `{"customerId":"C-1","status":"paused","pausedUntil":"2026-12-20","reason":"moved","idempotencyKey":"k-3"}`)
		if m := decode[map[string]any](t, res); m["changed"] != true {
			t.Errorf("a new pause date: %v, want changed", m)
		}
	})
}

// TestSetContactStatusAgentOnOldClient: an agent on a 2025-11-25 client is
// refused with confirmation_required, the preview in the message (customer
// text quoted), and nothing changes: not the status, and no event says it
// did.
func TestSetContactStatusAgentOnOldClient(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		before := e.get(t, "C-1")
		res := e.do(agent, legacy, set, `{"customerId":"C-1","status":"do_not_contact","reason":"asked by \"phone\"","idempotencyKey":"k-1"}`)
		if code, _ := failed(res); res.Kind != pipeline.ToolError || code != failure.ConfirmationRequired {
			t.Fatalf("agent on 2025-11-25: kind %d %v, want confirmation_required", res.Kind, res.Err)
		}
		wantPreview := `change the contact status of customer "C-1" ("Padaria \"São João\" {{.Secret}}") from contactable to do_not_contact, ` +
			`for the reason "asked by \"phone\""; and discard its 0 open reminder draft(s).`
		if !strings.Contains(res.Err.Message, wantPreview) {
			t.Errorf("message %q, want the preview %q", res.Err.Message, wantPreview)
		}
		// The status it already has: the preview says nothing would change.
		res = e.do(agent, legacy, set, `{"customerId":"C-1","status":"contactable","reason":"paid","idempotencyKey":"k-2"}`)
		if want := `leave customer "C-1" ("Padaria \"São João\" {{.Secret}}") as it is: it already has the status contactable; nothing would change.`; res.Err == nil || !strings.Contains(res.Err.Message, want) {
			t.Errorf("the same status on 2025-11-25: %v, want the preview %q", res.Err, want)
		}
		if after := e.get(t, "C-1"); !cmp.Equal(after, before) {
			t.Errorf("after the refusals: %+v, want %+v", after, before)
		}
		if got := pipelinetest.Audited(t, e.db, set); got["allowed"]+got["unchanged"] != 0 || len(got) != 1 {
			t.Errorf("audit outcomes %v, want only the refusal", got)
		}
	})
}

// TestSetContactStatusConfirmed: an agent's do_not_contact, confirmed in
// band, discards the customer's open drafts in the same transaction (and
// no other customer's); the preview counts them.
func TestSetContactStatusConfirmed(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		e.customer(t, customers.Record{ID: "C-2", Name: "Oficina", Email: "oficina@example.com"})
		e.draft(t, "C-1", padaria.Name, "NF-1")
		e.draft(t, "C-1", padaria.Name, "NF-2")
		other := e.draft(t, "C-2", "Oficina", "NF-3")
		args := `{"customerId":"C-1","status":"do_not_contact","reason":"asked by phone","idempotencyKey":"k-1"}`
		ask, res := e.confirmed(t, agent, set, args)
		var params struct{ Message string }
		if err := json.Unmarshal(ask.Inputs["confirm"].Params, &params); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(params.Message, `customer "C-1" ("Padaria \"São João\" {{.Secret}}") from contactable to do_not_contact`) ||
			!strings.Contains(params.Message, "discard its 2 open reminder draft(s)") {
			t.Errorf("confirmation message %q", params.Message)
		}
		want := map[string]any{"customerId": "C-1", "previousStatus": "contactable", "status": "do_not_contact", "changed": true, "draftsDiscarded": 2.0}
		if diff := cmp.Diff(want, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("confirmed (-want +got):\n%s", diff)
		}
		c := e.get(t, "C-1")
		if c.Status != customers.DoNotContact || c.SetBy != "ana" || c.SetByActor != "agent-7" || c.Reason != "asked by phone" {
			t.Errorf("stored %+v, want do_not_contact set by ana through agent-7", c)
		}
		if open, err := reminders.OpenDrafts(context.Background(), e.db, "C-1"); err != nil || len(open) != 0 {
			t.Errorf("C-1's open drafts after do_not_contact: %v, %v; want none", open, err)
		}
		if open, err := reminders.OpenDrafts(context.Background(), e.db, "C-2"); err != nil || len(open) != 1 || open[0].ID != other.ID {
			t.Errorf("C-2's open drafts: %v, %v; want its one draft kept", open, err)
		}
	})
}

// TestSetContactStatusRefusals: bad arguments and an unknown customer are
// refused naming the field, before any person is asked and with nothing
// changed.
func TestSetContactStatusRefusals(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		for _, tc := range []struct {
			pr    *auth.Principal
			args  string
			code  failure.Code
			field string
		}{
			{human, `{"customerId":"C-9","status":"do_not_contact","reason":"r","idempotencyKey":"k-1"}`, customers.CodeNotFound, "customerId"},
			{agent, `{"customerId":"C-9","status":"do_not_contact","reason":"r","idempotencyKey":"k-2"}`, customers.CodeNotFound, "customerId"},
			{human, `{"customerId":"C-1","status":"paused","pausedUntil":"2026-07-01","reason":"r","idempotencyKey":"k-3"}`, failure.InvalidArguments, "pausedUntil"},
			{agent, `{"customerId":"C-1","status":"paused","pausedUntil":"2026-06-30","reason":"r","idempotencyKey":"k-4"}`, failure.InvalidArguments, "pausedUntil"},
			{human, `{"customerId":"C-1","status":"paused","pausedUntil":"2027-02-29","reason":"r","idempotencyKey":"k-5"}`, failure.InvalidArguments, "pausedUntil"},
			{human, `{"customerId":"C-1","status":"paused","reason":"r","idempotencyKey":"k-6"}`, failure.InvalidArguments, "pausedUntil"},
			{human, `{"customerId":"C-1","status":"contactable","pausedUntil":"2027-01-01","reason":"r","idempotencyKey":"k-7"}`, failure.InvalidArguments, "pausedUntil"},
			{human, `{"customerId":"C-1","status":"gone","reason":"r","idempotencyKey":"k-8"}`, failure.InvalidArguments, "status"},
			{human, `{"customerId":"C-1","status":"do_not_contact","reason":"\u200b","idempotencyKey":"k-9"}`, failure.InvalidArguments, "reason"},
			// A combining mark alone passes the schema's pattern (see textPattern); Go refuses it.
			{human, `{"customerId":"C-1","status":"do_not_contact","reason":"\u0301","idempotencyKey":"k-9a"}`, failure.InvalidArguments, "reason"},
			{human, `{"customerId":"\u0301","status":"do_not_contact","reason":"r","idempotencyKey":"k-9b"}`, failure.InvalidArguments, "customerId"},
			{human, `{"customerId":"C-1","status":"do_not_contact","reason":"a\u202eb","idempotencyKey":"k-10"}`, failure.InvalidArguments, "reason"},
			{human, `{"customerId":"C-1","status":"do_not_contact","idempotencyKey":"k-11"}`, failure.InvalidArguments, "reason"},
			{human, `{"customerId":"C-1","status":"do_not_contact","reason":"r"}`, failure.InvalidArguments, "idempotencyKey"},
			{human, `{"customerId":"C-1","status":"do_not_contact","reason":"r","idempotencyKey":"k-12","note":"x"}`, failure.InvalidArguments, "note"},
		} {
			res := e.do(tc.pr, modern, set, tc.args)
			if code, field := failed(res); res.Kind != pipeline.ToolError || code != tc.code || field != tc.field {
				t.Errorf("%s %s: kind %d %v, want %s on %s", tc.pr.Kind, tc.args, res.Kind, res.Err, tc.code, tc.field)
			}
		}
		if c := e.get(t, "C-1"); c.Status != customers.Contactable || c.Reason != "" {
			t.Errorf("after the refusals: %+v, want untouched", c)
		}
	})
}

// TestGetCustomer: the customer, its status with who set it and when, and
// its open drafts by id and subject, never a body.
func TestGetCustomer(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		res := e.do(agent, modern, collections.GetCustomerName, `{"customerId":"C-1"}`)
		want := map[string]any{"customerId": "C-1", "name": padaria.Name, "email": padaria.Email,
			"contactStatus": map[string]any{"status": "contactable"}, "openDrafts": []any{}, "recentSends": []any{}}
		if diff := cmp.Diff(want, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("get_customer of a new customer (-want +got):\n%s", diff)
		}
		if strings.Contains(res.Summary, "Padaria") {
			t.Errorf("summary %q holds the customer's name", res.Summary)
		}

		d := e.draft(t, "C-1", padaria.Name, "NF-1")
		if r := e.do(human, modern, set, `{"customerId":"C-1","status":"paused","pausedUntil":"2027-01-10","reason":"on holiday","idempotencyKey":"k-1"}`); r.Kind != pipeline.Complete {
			t.Fatal(r.Err)
		}
		res = e.do(agent, modern, collections.GetCustomerName, `{"customerId":"C-1"}`)
		want = map[string]any{"customerId": "C-1", "name": padaria.Name, "email": padaria.Email,
			"contactStatus": map[string]any{"status": "paused", "pausedUntil": "2027-01-10", "reason": "on holiday", "setBy": "ana", "setAt": "2026-07-01T12:00:00Z"},
			"openDrafts":    []any{map[string]any{"draftId": d.ID, "subject": d.Subject}}, "recentSends": []any{}}
		// Exactly these members: a draft shows its id and subject, never its body.
		if diff := cmp.Diff(want, decode[map[string]any](t, res)); diff != "" {
			t.Errorf("get_customer (-want +got):\n%s", diff)
		}

		for _, tc := range []struct {
			args  string
			code  failure.Code
			field string
		}{
			{`{"customerId":"C-404"}`, customers.CodeNotFound, "customerId"},
			{`{"customerId":" "}`, failure.InvalidArguments, "customerId"},
			{`{"customerId":"\u0301"}`, failure.InvalidArguments, "customerId"},
			{`{}`, failure.InvalidArguments, "customerId"},
			{`{"customerId":"C-1","x":1}`, failure.InvalidArguments, "x"},
		} {
			res := e.do(agent, modern, collections.GetCustomerName, tc.args)
			if code, field := failed(res); res.Kind != pipeline.ToolError || code != tc.code || field != tc.field {
				t.Errorf("get_customer %s: kind %d %v, want %s on %s", tc.args, res.Kind, res.Err, tc.code, tc.field)
			}
		}

		// The status in effect on the pipeline's day (UTC), by prepare_reminder's rule: paused on the
		// last day of the pause; from pausedUntil on, contactable, saying when the pause ended.
		for _, tc := range []struct {
			at     time.Time
			status map[string]any
		}{
			{time.Date(2027, 1, 9, 23, 59, 59, 0, time.UTC),
				map[string]any{"status": "paused", "pausedUntil": "2027-01-10", "reason": "on holiday", "setBy": "ana", "setAt": "2026-07-01T12:00:00Z"}},
			{time.Date(2027, 1, 10, 0, 0, 0, 0, time.UTC),
				map[string]any{"status": "contactable", "pauseEnded": "2027-01-10", "reason": "on holiday", "setBy": "ana", "setAt": "2026-07-01T12:00:00Z"}},
		} {
			e.advance(tc.at.Sub(e.clock()))
			res := e.do(agent, modern, collections.GetCustomerName, `{"customerId":"C-1"}`)
			if diff := cmp.Diff(tc.status, decode[map[string]any](t, res)["contactStatus"]); diff != "" {
				t.Errorf("get_customer at %s: contactStatus (-want +got):\n%s", tc.at, diff)
			}
			if want := "contact status " + tc.status["status"].(string) + ";"; !strings.Contains(res.Summary, want) {
				t.Errorf("get_customer at %s: summary %q, want it to say %q", tc.at, res.Summary, want)
			}
			prep := e.do(agent, modern, collections.PrepareReminderName, `{"customer":{"id":"C-1","name":"Padaria","email":"financeiro@padaria.example"},`+
				`"invoices":[{"id":"NF-2","dueDate":"2026-11-01","amountCents":100}],"tone":"friendly","idempotencyKey":"p-`+tc.at.Format("150405")+`"}`)
			if code, _ := failed(prep); (code == "") != (tc.status["status"] == "contactable") {
				t.Errorf("at %s get_customer reads %s, but prepare_reminder answers %q: one rule, not two", tc.at, tc.status["status"], code)
			}
		}
		if got, want := pipelinetest.Audited(t, e.db, collections.GetCustomerName), map[string]int{"allowed": 4, "rejected": 5}; !cmp.Equal(got, want) {
			t.Errorf("get_customer audit outcomes %v, want %v", got, want)
		}
	})
}

// TestCustomerToolsContracts: every code the tools answer in these tests is
// one their contracts list, and the scopes are the shared decisions'.
func TestCustomerToolsContracts(t *testing.T) {
	all, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]pipeline.Tool{}
	var names []string
	for _, tool := range all {
		byName[tool.Contract.Name] = tool
		names = append(names, tool.Contract.Name)
	}
	if got := fmt.Sprint(names); !strings.Contains(got, collections.GetCustomerName) || strings.Index(got, collections.GetCustomerName) > strings.Index(got, set) {
		t.Errorf("tools in order %v: want get_customer before set_contact_status", names)
	}
	for name, want := range map[string]struct {
		scope string
		codes []failure.Code
	}{
		set:                         {"customers:write", []failure.Code{customers.CodeNotFound, failure.InvalidArguments, failure.ConfirmationRequired, failure.IdempotencyConflict}},
		collections.GetCustomerName: {"collections:read", []failure.Code{customers.CodeNotFound, failure.InvalidArguments}},
	} {
		c := byName[name].Contract
		if c == nil {
			t.Fatalf("no tool %s", name)
		}
		if !cmp.Equal(c.Permissions, []string{want.scope}) {
			t.Errorf("%s permissions %v, want %s", name, c.Permissions, want.scope)
		}
		for _, code := range want.codes {
			if !c.Allows(code) {
				t.Errorf("%s does not list %s", name, code)
			}
		}
		if c.SideEffects.OnRepeat == "" {
			t.Errorf("%s says nothing of a repeat", name)
		}
	}
}
