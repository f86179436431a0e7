package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// noteTool is a high-tier tool that sets a customer's note: what a person
// confirms ("from A to B") depends on the note stored.
func noteTool(t *testing.T) pipeline.Tool {
	t.Helper()
	c := tierContract("test.note", contract.High)
	c.DryRun = contract.ModeNone
	c.InputSchema = &jsonschema.Schema{Type: "object", Required: []string{"customer", "note"}, Properties: map[string]*jsonschema.Schema{
		"customer": {Type: "string"}, "note": {Type: "string"}, contract.ArgIdempotencyKey: {Type: "string"},
	}}
	type noteArgs struct{ Customer, Note string }
	current := func(ctx context.Context, q store.Querier, customer string) (string, error) {
		sql := `SELECT note FROM test_note WHERE customer = $1`
		if tx, ok := q.(store.Tx); ok && tx.Dialect() == store.Postgres {
			sql += ` FOR UPDATE`
		}
		var note string
		err := q.QueryRow(ctx, sql, customer).Scan(&note)
		return note, err
	}
	return pipeline.Tool{
		Contract: c,
		Decode:   pipeline.Strict[noteArgs](),
		Preview: func(ctx context.Context, q store.Querier, v any) (string, error) {
			a := v.(*noteArgs)
			note, err := current(ctx, q, a.Customer)
			return "set the note of " + a.Customer + " from " + note + " to " + a.Note, err
		},
		Execute: func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
			a := v.(*noteArgs)
			if _, err := tx.Exec(ctx, `UPDATE test_note SET note = $2 WHERE customer = $1`, a.Customer, a.Note); err != nil {
				return pipeline.Effect{}, err
			}
			return pipeline.Effect{Structured: map[string]any{"ok": true, "customer": a.Customer}, Summary: "note set"}, nil
		},
	}
}

// TestConfirmedPreviewChanged: a person confirms what a call would do as
// read then; if, by the time the call runs, it would do something else (the
// stored note changed in between), nothing is done and the person is asked
// again, shown the new preview; once that is confirmed the call runs, and
// the client's exact resend of the confirmed retry gets the stored answer.
func TestConfirmedPreviewChanged(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		if _, err := db.Exec(ctx, `CREATE TABLE test_note (customer TEXT PRIMARY KEY, note TEXT NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(ctx, `INSERT INTO test_note VALUES ('c1', 'A')`); err != nil {
			t.Fatal(err)
		}
		keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{noteTool(t)}, Auditor: pipelinetest.Auditor(t, db),
			DB: db, Keys: keys, States: newRing(t)})
		if err != nil {
			t.Fatal(err)
		}
		args := json.RawMessage(`{"customer":"c1","note":"C","idempotencyKey":"k1"}`)
		call := func(state string, accept bool) pipeline.Result {
			c := pipeline.Call{Principal: agent, Tool: "test.note", Args: args, Client: modern, State: state}
			if state != "" {
				c.Responses = confirm("accept", accept)
			}
			return p.Do(ctx, c)
		}
		message := func(res pipeline.Result) string {
			var params struct{ Message string }
			if in, ok := res.Inputs["confirm"]; ok {
				_ = json.Unmarshal(in.Params, &params)
			}
			return params.Message
		}
		note := func() string {
			var n string
			if err := db.QueryRow(ctx, `SELECT note FROM test_note WHERE customer = 'c1'`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n
		}

		first := call("", false)
		if first.Kind != pipeline.InputRequired || !strings.Contains(message(first), "from A to C") {
			t.Fatalf("first call: %s %q, want the confirmation of from A to C", kindName(first.Kind), message(first))
		}
		// Someone else changes the note while the person reads.
		if _, err := db.Exec(ctx, `UPDATE test_note SET note = 'B' WHERE customer = 'c1'`); err != nil {
			t.Fatal(err)
		}
		again := call(first.State, true)
		if again.Kind != pipeline.InputRequired || !strings.Contains(message(again), "from B to C") || !strings.Contains(message(again), "has changed") {
			t.Fatalf("accepted a stale preview: %s %v %q; want to be asked again, from B to C", kindName(again.Kind), again.Err, message(again))
		}
		if n := note(); n != "B" {
			t.Fatalf("the note is %s after a stale confirmation, want B (nothing done)", n)
		}
		done := call(again.State, true)
		if done.Kind != pipeline.Complete || note() != "C" {
			t.Fatalf("confirmed the current preview: %s %v, note %s; want complete, C", kindName(done.Kind), done.Err, note())
		}
		// The client resends its confirmed retry as it was (its answer was
		// lost): the key's stored answer, not a refusal of the spent state.
		resend := call(again.State, true)
		if resend.Kind != pipeline.Complete || string(resend.Structured) != string(done.Structured) {
			t.Errorf("the confirmed retry resent: %s %v, want the stored answer %s", kindName(resend.Kind), resend.Err, done.Structured)
		}
		if got := pipelinetest.Audited(t, db, "test.note"); got["allowed"] != 1 || got["input_required"] != 2 || got["replayed"] != 1 {
			t.Errorf("audit %v, want 1 allowed, 2 input_required, 1 replayed", got)
		}
	})
}

// TestNaturalKeyNotStored: a naturally idempotent tool's answer is never
// kept under its idempotency key (it may hold a credential): a repeat of the
// key runs the tool again, which answers the same by itself, audited
// unchanged; other arguments under the key still conflict.
func TestNaturalKeyNotStored(t *testing.T) {
	both(t, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		if _, err := db.Exec(ctx, effectTable); err != nil {
			t.Fatal(err)
		}
		keys, err := idempotency.New(db.Dialect(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		c := tierContract("test.link", contract.Medium)
		c.Idempotency = contract.Idempotency{Kind: "natural", Description: "the same customer, the same row"}
		c.DryRun = contract.ModeNone
		runs := 0
		tool := pipeline.Tool{Contract: c, Decode: pipeline.Strict[markArgs](),
			Execute: func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
				runs++
				a := v.(*markArgs)
				var n int64
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM test_effect WHERE customer = $1`, a.Customer).Scan(&n); err != nil {
					return pipeline.Effect{}, err
				}
				eff := pipeline.Effect{Structured: map[string]any{"ok": true, "customer": "secret-url-for-" + a.Customer}, Unchanged: n > 0}
				if n == 0 {
					_, err := tx.Exec(ctx, `INSERT INTO test_effect (tool, customer) VALUES ('test.link', $1)`, a.Customer)
					return eff, err
				}
				return eff, nil
			}}
		p, err := pipeline.New(pipeline.Options{Tools: []pipeline.Tool{tool}, Auditor: pipelinetest.Auditor(t, db), DB: db, Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		do := func(args string) pipeline.Result {
			return p.Do(ctx, pipeline.Call{Principal: agent, Tool: "test.link", Args: json.RawMessage(args)})
		}
		first := do(`{"customer":"c1","idempotencyKey":"k1"}`)
		again := do(`{"customer":"c1","idempotencyKey":"k1"}`)
		if first.Kind != pipeline.Complete || again.Kind != pipeline.Complete || string(first.Structured) != string(again.Structured) || runs != 2 {
			t.Fatalf("a key repeated: %s then %s (%s, %s), %d runs; want the same answer, the tool run twice", kindName(first.Kind), kindName(again.Kind), first.Structured, again.Structured, runs)
		}
		if res := do(`{"customer":"c2","idempotencyKey":"k1"}`); code(res) != failure.IdempotencyConflict {
			t.Errorf("other arguments under the key: %s %q, want idempotency_conflict", kindName(res.Kind), code(res))
		}
		rows, err := db.Query(ctx, `SELECT response FROM idempotency_key`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var resp []byte
			if err := rows.Scan(&resp); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(resp), "secret-url") {
				t.Errorf("the key stored the answer %q", resp)
			}
		}
		if got := pipelinetest.Audited(t, db, "test.link"); got["allowed"] != 1 || got["unchanged"] != 1 {
			t.Errorf("audit %v, want 1 allowed, 1 unchanged", got)
		}
	})
}
