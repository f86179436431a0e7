package web

import (
	"reflect"
	"slices"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/schedules"
)

// TestSkipWords: every reason a plan counts is on the page, in both languages — a reason
// added to schedules.Skips and not here fails.
func TestSkipWords(t *testing.T) {
	var all schedules.Skips
	v := reflect.ValueOf(&all).Elem()
	for i := range v.NumField() {
		v.Field(i).SetInt(int64(i + 1))
	}
	rows := skipRows(all)
	if len(rows) != v.NumField() {
		t.Fatalf("skipRows lists %d reasons, want schedules.Skips' %d", len(rows), v.NumField())
	}
	for i, r := range rows {
		if f := v.Type().Field(i); f.Tag.Get("json") != r.Reason || r.N != i+1 {
			t.Errorf("skip row %d = %s %d, want %s %d", i, r.Reason, r.N, f.Tag.Get("json"), i+1)
		}
		for _, tx := range supported {
			if tx.Schedules.SkipReasons[r.Reason] == "" {
				t.Errorf("no %s words for the skip reason %s", tx.Tag, r.Reason)
			}
		}
	}
	if rows := skipRows(schedules.Skips{CapBatch: 3}); len(rows) != 1 || rows[0] != (skipRow{"capBatch", 3}) {
		t.Errorf("skipRows of one reason = %v, want [capBatch 3]", rows)
	}
}

// TestScheduleWords: offsets and windows in words, in both languages.
func TestScheduleWords(t *testing.T) {
	w, err := calendar.ParseWindow("America/Manaus", "09:30", "18:00", []string{"mon", "wed", "fri"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tx                    *texts
		offsets               [5]string // -3, -1, 0, 1, 12
		window, defaultWindow string
	}{
		{&english, [5]string{"3 business days before the due date", "1 business day before the due date",
			"on the due date (the next business day when it is not one)", "1 business day after the due date", "12 business days after the due date"},
			"09:30 to 18:00, Monday, Wednesday and Friday, in America/Manaus time; never on a bank holiday",
			"08:00 to 20:00, Monday to Saturday, in America/Sao_Paulo time; never on a bank holiday"},
		{&portuguese, [5]string{"3 dias úteis antes do vencimento", "1 dia útil antes do vencimento",
			"no dia do vencimento (no dia útil seguinte, se não for um)", "1 dia útil depois do vencimento", "12 dias úteis depois do vencimento"},
			"das 09:30 às 18:00, segunda, quarta e sexta, no fuso America/Manaus; nunca em feriado bancário",
			"das 08:00 às 20:00, de segunda a sábado, no fuso America/Sao_Paulo; nunca em feriado bancário"},
	} {
		for i, n := range []int{-3, -1, 0, 1, 12} {
			if got := tc.tx.Offset(n); got != tc.offsets[i] {
				t.Errorf("%s Offset(%d) = %q, want %q", tc.tx.Tag, n, got, tc.offsets[i])
			}
		}
		if got := tc.tx.WindowWords(w); got != tc.window {
			t.Errorf("%s WindowWords(%s) = %q, want %q", tc.tx.Tag, w, got, tc.window)
		}
		if got := tc.tx.WindowWords(calendar.DefaultWindow()); got != tc.defaultWindow {
			t.Errorf("%s WindowWords(default) = %q, want %q", tc.tx.Tag, got, tc.defaultWindow)
		}
	}
}

// TestBatchWords: every batch outcome, approval state and draft skip reason get_schedule can
// answer has words on the schedule page, in both languages — one added to the tool and not
// here fails. The words are held to the tool's output schema, since the page (which imports
// no tool) cannot name collections' reasons.
func TestBatchWords(t *testing.T) {
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tools, func(tl pipeline.Tool) bool { return tl.Contract.Name == collections.GetScheduleName })
	if i < 0 {
		t.Fatalf("no tool %s", collections.GetScheduleName)
	}
	batch := tools[i].Contract.OutputSchema.Properties["latestBatches"].Items
	skipped := batch.Properties["skipped"].Properties
	if n := tools[i].Contract.OutputSchema.Properties["latestBatches"].MaxItems; n == nil || *n != schedules.LatestShown {
		t.Errorf("get_schedule answers %v batches at most, the page %d", n, schedules.LatestShown)
	}
	for _, tx := range supported {
		s := &tx.Schedules
		for _, o := range append(batch.Properties["outcome"].Enum, batchSent) {
			if s.Outcomes[o.(string)] == "" {
				t.Errorf("no %s words for the batch outcome %s", tx.Tag, o)
			}
		}
		for _, st := range batch.Properties["approvalState"].Enum {
			if s.ApprovalStates[approval.State(st.(string))] == "" {
				t.Errorf("no %s words for the approval state %s", tx.Tag, st)
			}
		}
		for _, part := range []string{"bulk", "send"} {
			if len(skipped[part].Properties) == 0 {
				t.Fatalf("get_schedule's skipped.%s names no reason", part)
			}
			for reason := range skipped[part].Properties {
				if s.DraftSkipReasons[reason] == "" {
					t.Errorf("no %s words for the draft skip reason %s (skipped.%s)", tx.Tag, reason, part)
				}
			}
		}
		for reason := range skipped["plan"].Properties {
			if s.SkipReasons[reason] == "" {
				t.Errorf("no %s words for the plan skip reason %s", tx.Tag, reason)
			}
		}
	}
}

// TestCountRows: a bulk send's skips, the most first, then by name; none counted, none shown.
func TestCountRows(t *testing.T) {
	got := countRows(map[string]int{"stale": 1, "settled": 3, "paused": 1, "notOpen": 0})
	want := []skipRow{{"settled", 3}, {"paused", 1}, {"stale", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("countRows = %v, want %v", got, want)
	}
	if got := countRows(nil); got != nil {
		t.Errorf("countRows(nil) = %v, want none", got)
	}
}
