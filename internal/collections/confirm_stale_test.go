package collections_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/pipeline"
)

// TestSetContactStatusStaleConfirmation: the reviewer's case. A person is
// shown "from paused to contactable" and accepts; meanwhile someone else set
// do_not_contact. The accepted call must not lift a do_not_contact nobody
// saw: nothing changes, and the person is asked again, shown the status the
// customer has now.
func TestSetContactStatusStaleConfirmation(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		setStatus(t, e.db, padaria.ID, customers.Change{Status: customers.Paused, PausedUntil: "2026-07-20", Reason: "on holiday"}, e.clock())
		args := `{"customerId":"C-1","status":"contactable","reason":"back from holiday","idempotencyKey":"k-1"}`
		ask := e.do(agent, modern, collections.SetContactStatusName, args)
		if ask.Kind != pipeline.InputRequired || !strings.Contains(string(ask.Inputs["confirm"].Params), "paused until 2026-07-20") {
			t.Fatalf("first call: kind %d %v %s, want the confirmation from paused", ask.Kind, ask.Err, ask.Inputs["confirm"].Params)
		}
		setStatus(t, e.db, padaria.ID, customers.Change{Status: customers.DoNotContact, Reason: "asked, by law"}, e.clock())
		accept, _ := json.Marshal(map[string]any{"action": "accept", "content": map[string]any{"confirm": true}})
		res := e.p.Do(context.Background(), pipeline.Call{Principal: agent, RequestID: "r-2", Tool: collections.SetContactStatusName,
			Args: json.RawMessage(args), Client: modern, State: ask.State, Responses: map[string]json.RawMessage{"confirm": accept}})
		if res.Kind != pipeline.InputRequired || !strings.Contains(string(res.Inputs["confirm"].Params), "do_not_contact") {
			t.Fatalf("accepted a stale preview: kind %d %v %s; want to be asked again, from do_not_contact", res.Kind, res.Err, res.Inputs["confirm"].Params)
		}
		if c := e.get(t, padaria.ID); c.Status != customers.DoNotContact {
			t.Errorf("status %s after a stale confirmation, want do_not_contact (nothing done)", c.Status)
		}
	})
}

// TestSetContactStatusAfterPauseEnded: a pause that is over is contactable
// (the rule get_customer and prepare_reminder read): the person confirming
// reads so, previousStatus says so, and setting contactable changes nothing.
func TestSetContactStatusAfterPauseEnded(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		e.customer(t, padaria)
		setStatus(t, e.db, padaria.ID, customers.Change{Status: customers.Paused, PausedUntil: "2026-07-20", Reason: "on holiday"}, e.clock())
		e.advance(20 * 24 * time.Hour) // 2026-07-21
		ask := e.do(agent, modern, collections.SetContactStatusName, `{"customerId":"C-1","status":"do_not_contact","reason":"asked","idempotencyKey":"k-1"}`)
		if !strings.Contains(string(ask.Inputs["confirm"].Params), "from contactable (a pause ended on 2026-07-20) to do_not_contact") {
			t.Errorf("the confirmation of a change after the pause: %s", ask.Inputs["confirm"].Params)
		}
		res := e.do(human, modern, collections.SetContactStatusName, `{"customerId":"C-1","status":"contactable","reason":"back","idempotencyKey":"k-2"}`)
		var out struct {
			PreviousStatus string
			Changed        bool
		}
		if res.Kind != pipeline.Complete || json.Unmarshal(res.Structured, &out) != nil || out.PreviousStatus != "contactable" || out.Changed {
			t.Errorf("contactable after the pause: %d %v %s; want complete, previousStatus contactable, changed false", res.Kind, res.Err, res.Structured)
		}
	})
}
