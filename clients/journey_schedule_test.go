package clients_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
)

// The journey's schedules leg (issue 30): a collection schedule dry-run (its next business
// day's plan, nothing stored), then created (high: the agent's person confirms in band);
// and a schedule the operator made earlier (seedSchedule) previewed, paused (medium: the
// agent alone) and read back paused.

// scheduleArgs is the journey's schedule, ending 30 days from now.
func scheduleArgs(t *testing.T, extra map[string]any) json.RawMessage {
	t.Helper()
	end := time.Now().In(saoPaulo(t)).AddDate(0, 0, 30).Format(time.DateOnly)
	args := map[string]any{"name": "Régua da jornada", "audience": map[string]any{"all": true}, "endDate": end,
		"steps": []map[string]any{{"offset": 3, "tone": "friendly"}, {"offset": 10, "tone": "firm", "language": "en"}}}
	for k, v := range extra {
		args[k] = v
	}
	return jsonOf(t, args)
}

func saoPaulo(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// seedSchedule stores the schedule the journey previews and pauses, as an operator's earlier
// create_schedule would.
func (s *compatServer) seedSchedule(t *testing.T) {
	t.Helper()
	var spec schedules.Spec
	if err := json.Unmarshal(scheduleArgs(t, nil), &spec); err != nil {
		t.Fatal(err)
	}
	sch, fe := spec.Validate(func(loc *time.Location) calendar.Date { return calendar.DateOf(time.Now(), loc) })
	if fe != nil {
		t.Fatal(fe)
	}
	err := s.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		sch, err = schedules.Create(ctx, tx, sch, schedules.Stamp{By: "operator"}, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	s.scheduleID = sch.ID
}

// scheduleSteps fills the schedules leg's steps into steps.
func (s *compatServer) scheduleSteps(t *testing.T, steps []journeyStep) {
	t.Helper()
	s.seedSchedule(t)
	steps[jScheduleDryRun] = journeyStep{Tool: collections.CreateScheduleName, Args: scheduleArgs(t, map[string]any{"dryRun": true})}
	steps[jSchedule] = journeyStep{Tool: collections.CreateScheduleName, High: true,
		Args:   scheduleArgs(t, map[string]any{"idempotencyKey": "journey-schedule"}),
		Answer: &journeyAnswer{Action: "accept", Content: map[string]any{"confirm": true}}}
	steps[jSchedulePreview] = journeyStep{Tool: collections.PreviewScheduleName, Args: jsonOf(t, map[string]any{"scheduleId": s.scheduleID})}
	steps[jSchedulePause] = journeyStep{Tool: collections.PauseScheduleName, Args: jsonOf(t, map[string]any{"scheduleId": s.scheduleID, "idempotencyKey": "journey-pause"})}
	steps[jScheduleGet] = journeyStep{Tool: collections.GetScheduleName, Args: jsonOf(t, map[string]any{"scheduleId": s.scheduleID})}
}

// checkScheduleJourney holds the schedules leg to what the client could do: confirmed, the
// schedule was created; on 2025-11-25 the create is confirmation_required; the reads and the
// pause work on every client.
func (s *compatServer) checkScheduleJourney(t *testing.T, rep report, confirmed, ranHigh bool) {
	t.Helper()
	if forms := elicitedIn(t, rep.JourneyElicited, "form"); confirmed && (len(forms) != 3 || !strings.Contains(string(forms[2]), "Régua da jornada")) {
		t.Errorf("create_schedule: confirmations shown %s; want a third one, naming the schedule", forms)
	}
	dry := fields(t, "create_schedule dry run", rep.Journey[jScheduleDryRun])
	next, _ := dry["nextBatch"].(map[string]any)
	if dry["dryRun"] != true || next == nil || next["date"] == nil {
		t.Errorf("create_schedule dry run: %v; want dryRun true and the next business day's plan", dry)
	}
	stored, err := schedules.List(context.Background(), s.db, schedules.Filter{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case confirmed:
		got := fields(t, "create_schedule", rep.Journey[jSchedule])
		sch, _ := got["schedule"].(map[string]any)
		if got["dryRun"] != false || sch == nil || !schedules.ValidID(str(sch["id"])) || sch["state"] != "active" {
			t.Errorf("create_schedule, confirmed: %v; want an active schedule", got)
		}
		if len(stored) != 2 {
			t.Errorf("%d schedules stored after the confirmed create, want 2", len(stored))
		}
	case ranHigh:
		wantToolError(t, "create_schedule on 2025-11-25", *rep.Journey[jSchedule], failure.ConfirmationRequired, "")
		fallthrough
	default:
		if len(stored) != 1 {
			t.Errorf("%d schedules stored without a confirmed create, want the seeded one", len(stored))
		}
	}
	pv := fields(t, "preview_schedule", rep.Journey[jSchedulePreview])
	if pv["scheduleId"] != s.scheduleID || pv["date"] == nil {
		t.Errorf("preview_schedule: %v; want the plan of %s", pv, s.scheduleID)
	}
	pause := fields(t, "pause_schedule", rep.Journey[jSchedulePause])
	if pause["changed"] != true {
		t.Errorf("pause_schedule: %v; want changed", pause)
	}
	get := fields(t, "get_schedule", rep.Journey[jScheduleGet])
	if get["id"] != s.scheduleID || get["state"] != "paused" || !strings.Contains(str(get["name"]), "jornada") {
		t.Errorf("get_schedule after the pause: %v; want %s paused", get, s.scheduleID)
	}
}
