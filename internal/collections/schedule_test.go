package collections_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
)

var (
	scheduleScopes = []string{"schedules:read", "schedules:write"}
	// scheduler is an agent acting for ana; scheduleReader may only read schedules.
	scheduler      = &auth.Principal{Subject: "ana", ClientID: "assistant", Actor: "agent-7", Kind: auth.KindAgent, Scopes: scheduleScopes}
	scheduleReader = &auth.Principal{Subject: "ana", ClientID: "ops", Scopes: []string{"schedules:read"}}
	// schedulePerson is ana herself, in the console.
	schedulePerson = &auth.Principal{Subject: "ana", ClientID: "ops-console", Kind: auth.KindHuman, Scopes: scheduleScopes}
)

// régua is a schedule the env's day (2026-07-01, a Wednesday) accepts.
const régua = `{"name":"Régua padrão","steps":[{"offset":3,"tone":"friendly"},{"offset":10,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-08-31"`

type scheduleAnswer struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	State   string `json:"state"`
	EndDate string `json:"endDate"`
	Steps   []struct {
		Offset   int    `json:"offset"`
		Template string `json:"template"`
	} `json:"steps"`
	Created *struct{ By, Actor string } `json:"created"`
	Paused  *struct{ By, Actor string } `json:"paused"`
	Resumed *struct{ By, Actor string } `json:"resumed"`
}

type planAnswer struct {
	Date         string         `json:"date"`
	BusinessDay  bool           `json:"businessDay"`
	MessageCount int            `json:"messageCount"`
	InvoiceCount int            `json:"invoiceCount"`
	Skipped      map[string]int `json:"skipped"`
	Samples      []struct {
		CustomerID string   `json:"customerId"`
		InvoiceIDs []string `json:"invoiceIds"`
	} `json:"samples"`
}

// scheduleLedger writes two customers' open invoices, due long enough ago for the second step,
// and a do_not_contact customer's.
func scheduleLedger(t *testing.T, e *env) {
	t.Helper()
	err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		for _, id := range []string{"C-1", "C-2", "C-3"} {
			if _, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Cliente " + id, Email: strings.ToLower(id) + "@example.com"}, e.clock()); err != nil {
				return err
			}
		}
		if _, err := customers.SetStatus(ctx, tx, "C-3", customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "ana"}, e.clock()); err != nil {
			return err
		}
		_, err := ledger.UpsertInvoices(ctx, tx, []ledger.InvoiceRecord{
			{InvoiceID: "NF-1", CustomerID: "C-1", AmountCents: 150000, Currency: "BRL", DueDate: "2026-06-01"},
			{InvoiceID: "NF-2", CustomerID: "C-2", AmountCents: 9900, Currency: "BRL", DueDate: "2026-06-02"},
			{InvoiceID: "NF-3", CustomerID: "C-3", AmountCents: 5000, Currency: "BRL", DueDate: "2026-06-01"},
		}, e.clock())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestScheduleLifecycle: through the pipeline, as an agent would: a dry run validates and plans
// the next business day, storing nothing; the real create waits for the person's confirmation;
// get and list read it; pause runs alone and a second pause changes nothing; the preview of a
// paused schedule counts its invoices as schedulePaused; resume waits for the person; a
// schedule past its end date cannot be resumed.
func TestScheduleLifecycle(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		scheduleLedger(t, e)
		dry := decode[struct {
			DryRun    bool           `json:"dryRun"`
			Schedule  scheduleAnswer `json:"schedule"`
			NextBatch planAnswer     `json:"nextBatch"`
		}](t, e.do(scheduler, modern, collections.CreateScheduleName, régua+`,"dryRun":true}`))
		if !dry.DryRun || dry.Schedule.ID != "" || dry.Schedule.Steps[1].Template != "pt-BR.firm" || dry.NextBatch.Date != "2026-07-02" ||
			dry.NextBatch.MessageCount != 2 || dry.NextBatch.Skipped["doNotContact"] != 1 || len(dry.NextBatch.Samples) != 2 {
			t.Errorf("dry run = %+v; want the next business day's plan: 2 messages, 1 do_not_contact", dry)
		}
		if list := decode[struct{ Schedules []scheduleAnswer }](t, e.call(scheduleReader, collections.ListSchedulesName, map[string]any{})); len(list.Schedules) != 0 {
			t.Fatalf("after a dry run: %d schedules stored, want none", len(list.Schedules))
		}

		args := régua + `,"idempotencyKey":"s-1"}`
		ask, done := e.confirmed(t, scheduler, collections.CreateScheduleName, args)
		var form struct{ Message string }
		_ = json.Unmarshal(ask.Inputs["confirm"].Params, &form)
		if !strings.Contains(form.Message, `"Régua padrão"`) || !strings.Contains(form.Message, "+10 business days") {
			t.Errorf("the confirmation shows %q; want the name and the steps", form.Message)
		}
		created := decode[struct {
			DryRun   bool           `json:"dryRun"`
			Schedule scheduleAnswer `json:"schedule"`
		}](t, done).Schedule
		if !schedules.ValidID(created.ID) || created.State != "active" || created.Created == nil || created.Created.Actor != "agent-7" {
			t.Fatalf("created %+v", created)
		}
		if again := decode[struct{ Schedule scheduleAnswer }](t, e.do(schedulePerson, modern, collections.CreateScheduleName, args)); again.Schedule.ID == created.ID {
			t.Errorf("another caller's key named the same schedule")
		}
		got := decode[scheduleAnswer](t, e.call(scheduleReader, collections.GetScheduleName, map[string]any{"scheduleId": created.ID}))
		if got.ID != created.ID || got.Name != "Régua padrão" || got.EndDate != "2026-08-31" {
			t.Errorf("get = %+v", got)
		}

		pause := fmt.Sprintf(`{"scheduleId":%q,"idempotencyKey":"p-1"}`, created.ID)
		res := e.do(scheduler, modern, collections.PauseScheduleName, pause)
		paused := decode[struct {
			Schedule scheduleAnswer `json:"schedule"`
			Changed  bool           `json:"changed"`
		}](t, res)
		if !paused.Changed || paused.Schedule.State != "paused" || paused.Schedule.Paused == nil || paused.Schedule.Paused.Actor != "agent-7" {
			t.Errorf("pause = %+v", paused)
		}
		if again := decode[struct{ Changed bool }](t, e.do(scheduler, modern, collections.PauseScheduleName, fmt.Sprintf(`{"scheduleId":%q,"idempotencyKey":"p-2"}`, created.ID))); again.Changed {
			t.Errorf("a second pause changed the schedule")
		}
		if ev := pipelinetest.Audited(t, e.db, collections.PauseScheduleName); ev["allowed"] != 1 || ev["unchanged"] != 1 {
			t.Errorf("pause audited %v, want one allowed and one unchanged", ev)
		}
		pv := decode[planAnswer](t, e.call(scheduleReader, collections.PreviewScheduleName, map[string]any{"scheduleId": created.ID, "date": "2026-07-02"}))
		if pv.MessageCount != 0 || pv.Skipped["schedulePaused"] != 2 || pv.Skipped["doNotContact"] != 1 {
			t.Errorf("preview of the paused schedule = %+v; want nothing, schedulePaused 2", pv)
		}

		resume := fmt.Sprintf(`{"scheduleId":%q,"idempotencyKey":"r-1"}`, created.ID)
		_, done = e.confirmed(t, scheduler, collections.ResumeScheduleName, resume)
		if r := decode[struct {
			Schedule scheduleAnswer `json:"schedule"`
			Changed  bool           `json:"changed"`
		}](t, done); !r.Changed || r.Schedule.State != "active" || r.Schedule.Resumed == nil {
			t.Errorf("resume = %+v", r)
		}
		if pv := decode[planAnswer](t, e.call(scheduleReader, collections.PreviewScheduleName, map[string]any{"scheduleId": created.ID, "date": "2026-07-02"})); pv.MessageCount != 2 {
			t.Errorf("preview after resume = %+v, want 2 messages", pv)
		}

		// Past its end date it cannot be resumed.
		e.do(scheduler, modern, collections.PauseScheduleName, fmt.Sprintf(`{"scheduleId":%q,"idempotencyKey":"p-3"}`, created.ID))
		e.advance(70 * 24 * time.Hour)
		if code, field := failed(e.do(schedulePerson, modern, collections.ResumeScheduleName, fmt.Sprintf(`{"scheduleId":%q,"idempotencyKey":"r-2"}`, created.ID))); code != schedules.CodeEnded || field != "scheduleId" {
			t.Errorf("resume past the end date: %s on %q, want %s", code, field, schedules.CodeEnded)
		}
	})
}

// TestScheduleRefusals: arguments the rules refuse name their field; an unknown schedule is
// schedule_not_found; a reader cannot write; nothing is stored by a refused call.
func TestScheduleRefusals(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		for _, tc := range []struct {
			pr         *auth.Principal
			tool, args string
			code       failure.Code
			field      string
		}{
			{schedulePerson, collections.CreateScheduleName, `{"name":"r","steps":[{"offset":3,"tone":"friendly"},{"offset":2,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-08-31","idempotencyKey":"k"}`, failure.InvalidArguments, "steps[1].offset"},
			{schedulePerson, collections.CreateScheduleName, `{"name":"r","steps":[{"offset":3,"tone":"friendly"}],"audience":{"all":true},"endDate":"2026-12-31","idempotencyKey":"k"}`, failure.InvalidArguments, "endDate"},
			{schedulePerson, collections.CreateScheduleName, `{"name":"r","steps":[{"offset":3,"tone":"friendly"}],"audience":{"all":true},"window":{"zone":"America/Sao_Paulo","open":"20:00","close":"08:00","days":["mon"]},"endDate":"2026-08-31","dryRun":true}`, failure.InvalidArguments, "window.close"},
			{schedulePerson, collections.CreateScheduleName, `{"name":"r","steps":[{"offset":3,"tone":"friendly"}],"audience":{"all":true},"endDate":"2026-08-31","extra":1,"idempotencyKey":"k"}`, failure.InvalidArguments, "extra"},
			{schedulePerson, collections.CreateScheduleName, `{"name":"r","steps":[{"offset":3,"tone":"friendly"}],"audience":{},"endDate":"2026-08-31","idempotencyKey":"k"}`, failure.InvalidArguments, "audience"},
			{scheduleReader, collections.GetScheduleName, `{"scheduleId":"sch_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`, schedules.CodeNotFound, "scheduleId"},
			{scheduleReader, collections.GetScheduleName, `{"scheduleId":"d_aaaaaaaaaaaaaaaaaaaaaaaaaa"}`, failure.InvalidArguments, "scheduleId"},
			{schedulePerson, collections.PauseScheduleName, `{"scheduleId":"sch_aaaaaaaaaaaaaaaaaaaaaaaaaa","idempotencyKey":"k"}`, schedules.CodeNotFound, "scheduleId"},
			{scheduleReader, collections.PreviewScheduleName, `{"scheduleId":"sch_aaaaaaaaaaaaaaaaaaaaaaaaaa","date":"2026-02-30"}`, failure.InvalidArguments, "date"},
			{scheduleReader, collections.ListSchedulesName, `{"cursor":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}`, failure.InvalidArguments, "cursor"},
		} {
			res := e.do(tc.pr, modern, tc.tool, tc.args)
			if code, field := failed(res); code != tc.code || field != tc.field {
				t.Errorf("%s %s: %s on %q (%v), want %s on %q", tc.tool, tc.args, code, field, res.Err, tc.code, tc.field)
			}
		}
		if res := e.do(scheduleReader, modern, collections.PauseScheduleName, `{"scheduleId":"sch_aaaaaaaaaaaaaaaaaaaaaaaaaa","idempotencyKey":"k"}`); res.Kind != pipeline.Denied {
			t.Errorf("pause by a reader: kind %d, want denied", res.Kind)
		}
		if list := decode[struct{ Schedules []scheduleAnswer }](t, e.call(scheduleReader, collections.ListSchedulesName, map[string]any{})); len(list.Schedules) != 0 {
			t.Errorf("after refused calls: %d schedules stored", len(list.Schedules))
		}
	})
}

// TestListSchedulesPages: walking the pages lists every schedule once, newest first; the
// state filter lists only its own.
func TestListSchedulesPages(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		person := schedulePerson
		var ids []string
		for i := range 5 {
			res := e.do(person, modern, collections.CreateScheduleName, régua+fmt.Sprintf(`,"idempotencyKey":"k-%d"}`, i))
			ids = append(ids, decode[struct{ Schedule scheduleAnswer }](t, res).Schedule.ID)
			e.advance(time.Second)
		}
		e.do(person, modern, collections.PauseScheduleName, fmt.Sprintf(`{"scheduleId":%q,"idempotencyKey":"p"}`, ids[1]))
		var seen []string
		args := map[string]any{"limit": 2}
		for range 4 {
			page := decode[struct {
				Schedules  []scheduleAnswer `json:"schedules"`
				NextCursor string           `json:"nextCursor"`
			}](t, e.call(scheduleReader, collections.ListSchedulesName, args))
			for _, s := range page.Schedules {
				seen = append(seen, s.ID)
			}
			if page.NextCursor == "" {
				break
			}
			args["cursor"] = page.NextCursor
		}
		want := []string{ids[4], ids[3], ids[2], ids[1], ids[0]}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("pages listed %v, want %v", seen, want)
		}
		paused := decode[struct{ Schedules []scheduleAnswer }](t, e.call(scheduleReader, collections.ListSchedulesName, map[string]any{"state": "paused"}))
		if len(paused.Schedules) != 1 || paused.Schedules[0].ID != ids[1] {
			t.Errorf("paused: %+v, want only %s", paused.Schedules, ids[1])
		}
		// A cursor of the unfiltered list does not open for the paused one.
		if code, field := failed(e.call(scheduleReader, collections.ListSchedulesName, map[string]any{"state": "paused", "cursor": args["cursor"]})); code != failure.InvalidArguments || field != "cursor" {
			t.Errorf("another filter's cursor: %s on %q, want invalid_arguments on cursor", code, field)
		}
	})
}
