package schedules_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/schedules"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

// day is the tests' today: a Wednesday, a business day in Brazil.
var day = calendar.Date{Year: 2026, Month: time.July, Day: 15}

func todayIs(d calendar.Date) func(*time.Location) calendar.Date {
	return func(*time.Location) calendar.Date { return d }
}

// valid is a schedule every rule accepts.
const valid = `{"name":"Régua padrão","steps":[{"offset":3,"tone":"friendly"},{"offset":10,"tone":"firm","language":"en"}],
"audience":{"all":true},"endDate":"2026-09-30"}`

func spec(t testing.TB, doc string) schedules.Spec {
	t.Helper()
	var s schedules.Spec
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestValidateDefaults: a valid schedule gets its defaults: pt-BR, the caps, the default
// window, active.
func TestValidateDefaults(t *testing.T) {
	s, fe := spec(t, valid).Validate(todayIs(day))
	if fe != nil {
		t.Fatalf("Validate = %v, want nil", fe)
	}
	if s.Steps[0].Language != "pt-BR" || s.Steps[1].Language != "en" || s.Steps[0].Template() != "pt-BR.friendly" {
		t.Errorf("steps = %+v, want pt-BR filled in for the first", s.Steps)
	}
	if s.Caps.PerCustomer7Days != schedules.DefaultPerCustomer || s.Caps.PerBatch != schedules.MaxPerBatch {
		t.Errorf("caps = %+v, want the defaults", *s.Caps)
	}
	def := calendar.DefaultWindow()
	if s.Window.Zone.String() != def.Zone.String() || s.Window.Open != def.Open || s.Window.Close != def.Close ||
		s.Spec.Window.Open != "08:00" || s.Spec.Window.Close != "20:00" || len(s.Spec.Window.Days) != 6 || s.Spec.Window.Days[0] != "mon" {
		t.Errorf("window = %+v (%+v), want the default window written out", s.Window, *s.Spec.Window)
	}
	if s.State != schedules.Active || s.EndDate.String() != "2026-09-30" {
		t.Errorf("state %s, end %s", s.State, s.EndDate)
	}
}

// TestValidateRefuses: every rule refuses with invalid_arguments naming its field.
func TestValidateRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, doc, field string
	}{
		{"blank name", `{"name":" ","steps":[{"offset":3,"tone":"friendly"}],"audience":{"all":true},"endDate":"2026-09-30"}`, "name"},
		{"no steps", `{"name":"r","steps":[],"audience":{"all":true},"endDate":"2026-09-30"}`, "steps"},
		{"steps out of order", `{"name":"r","steps":[{"offset":3,"tone":"friendly"},{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-09-30"}`, "steps[1].offset"},
		{"offset too far", `{"name":"r","steps":[{"offset":366,"tone":"friendly"}],"audience":{"all":true},"endDate":"2026-09-30"}`, "steps[0].offset"},
		{"unknown tone", `{"name":"r","steps":[{"offset":3,"tone":"angry"}],"audience":{"all":true},"endDate":"2026-09-30"}`, "steps[0].tone"},
		{"unknown language", `{"name":"r","steps":[{"offset":3,"tone":"firm","language":"fr"}],"audience":{"all":true},"endDate":"2026-09-30"}`, "steps[0].language"},
		{"no audience", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{},"endDate":"2026-09-30"}`, "audience"},
		{"all and more", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true,"minOpenCents":5},"endDate":"2026-09-30"}`, "audience.all"},
		{"customer twice", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"customerIds":["a","a"]},"endDate":"2026-09-30"}`, "audience.customerIds[1]"},
		{"customer blank", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"customerIds":[" a"]},"endDate":"2026-09-30"}`, "audience.customerIds[0]"},
		{"amounts upside down", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"minOpenCents":500,"maxOpenCents":100},"endDate":"2026-09-30"}`, "audience.maxOpenCents"},
		{"overdue upside down", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"minBusinessDaysOverdue":9,"maxBusinessDaysOverdue":2},"endDate":"2026-09-30"}`, "audience.maxBusinessDaysOverdue"},
		{"cap per customer", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"caps":{"perCustomer7Days":21},"endDate":"2026-09-30"}`, "caps.perCustomer7Days"},
		{"cap per batch", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"caps":{"perBatch":10001},"endDate":"2026-09-30"}`, "caps.perBatch"},
		{"window open", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"window":{"zone":"America/Sao_Paulo","open":"25:00","close":"20:00","days":["mon"]},"endDate":"2026-09-30"}`, "window.open"},
		{"window zone", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"window":{"zone":"Mars/Base","open":"08:00","close":"20:00","days":["mon"]},"endDate":"2026-09-30"}`, "window.zone"},
		{"end date form", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"30/09/2026"}`, "endDate"},
		{"end date past", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-07-14"}`, "endDate"},
		{"end date too far", `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-10-14"}`, "endDate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, fe := spec(t, tc.doc).Validate(todayIs(day))
			if fe == nil || fe.Code != failure.InvalidArguments || fe.Field != tc.field || fe.Message == "" {
				t.Fatalf("Validate = %+v, want invalid_arguments on %s", fe, tc.field)
			}
		})
	}
	// 90 days ahead is the last day accepted; without a clock the horizon is not checked.
	if _, fe := spec(t, `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"2026-10-13"}`).Validate(todayIs(day)); fe != nil {
		t.Errorf("end date 90 days ahead: %v, want accepted", fe)
	}
	if _, fe := spec(t, `{"name":"r","steps":[{"offset":3,"tone":"firm"}],"audience":{"all":true},"endDate":"2030-01-01"}`).Validate(nil); fe != nil {
		t.Errorf("no clock: %v, want the end date's form checked only", fe)
	}
}
