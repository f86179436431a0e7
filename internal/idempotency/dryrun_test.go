package idempotency_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

func plan(c string) string { return strings.Repeat(c, 64) }

func dryRunOf(principal, args, p string) idempotency.DryRun {
	return idempotency.DryRun{Principal: principal, Tool: "collections.bulk_send_reminders", Args: fp(args), Plan: p}
}

func (e env) record(t *testing.T, d idempotency.DryRun) {
	t.Helper()
	if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error { return e.s.RecordDryRun(ctx, tx, d) }); err != nil {
		t.Fatalf("RecordDryRun: %v", err)
	}
}

func (e env) recorded(t *testing.T, d idempotency.DryRun) bool {
	t.Helper()
	ok, err := e.s.DryRunRecorded(context.Background(), e.db, d)
	if err != nil {
		t.Fatalf("DryRunRecorded: %v", err)
	}
	return ok
}

// testDryRuns: a dry run is recorded for its caller, tool and arguments, with its plan; a newer
// one of the same arguments replaces the plan; it expires after DryRunTTL and is reaped; a
// caller keeps its newest MaxDryRunsPerCaller; what the table could not hold is refused
// before any SQL.
func testDryRuns(t *testing.T, e env) {
	d := dryRunOf("ana|bot|bot", "a", plan("a"))
	e.record(t, d)
	for _, tt := range []struct {
		name string
		d    idempotency.DryRun
		want bool
	}{
		{"the same", d, true},
		{"another plan", dryRunOf("ana|bot|bot", "a", plan("b")), false},
		{"other arguments", dryRunOf("ana|bot|bot", "b", plan("a")), false},
		{"another caller", dryRunOf("ana|bot|other", "a", plan("a")), false},
		{"another tool", idempotency.DryRun{Principal: d.Principal, Tool: "x.y", Args: d.Args, Plan: d.Plan}, false},
	} {
		if got := e.recorded(t, tt.d); got != tt.want {
			t.Errorf("%s: recorded %v, want %v", tt.name, got, tt.want)
		}
	}
	e.clock.Advance(time.Minute)
	newer := dryRunOf("ana|bot|bot", "a", plan("b"))
	e.record(t, newer)
	if e.recorded(t, d) || !e.recorded(t, newer) {
		t.Error("a newer dry run of the same arguments did not replace the plan")
	}
	e.clock.Advance(idempotency.DryRunTTL - time.Second)
	if !e.recorded(t, newer) {
		t.Error("expired before DryRunTTL")
	}
	e.clock.Advance(time.Second)
	if e.recorded(t, newer) {
		t.Error("recorded past DryRunTTL")
	}
	if n, err := e.s.Reap(context.Background(), e.db); err != nil || n != 1 {
		t.Errorf("Reap = %d, %v; want 1", n, err)
	}
	for i := range idempotency.MaxDryRunsPerCaller + 3 {
		e.record(t, dryRunOf("bruno|bot|bot", fmt.Sprint(i), plan("c")))
		e.clock.Advance(time.Microsecond)
	}
	e.record(t, dryRunOf("carla|bot|bot", "0", plan("c")))
	if n := storetest.Count(t, e.db, "dry_runs"); n != idempotency.MaxDryRunsPerCaller+1 {
		t.Errorf("%d dry runs kept, want %d", n, idempotency.MaxDryRunsPerCaller+1)
	}
	if e.recorded(t, dryRunOf("bruno|bot|bot", "2", plan("c"))) || !e.recorded(t, dryRunOf("bruno|bot|bot", "3", plan("c"))) {
		t.Error("the caller's oldest dry runs were not the ones dropped")
	}
	for _, bad := range []idempotency.DryRun{
		{Principal: "", Tool: "t", Args: fp("a"), Plan: plan("a")},
		{Principal: "p", Tool: "t", Args: []byte("short"), Plan: plan("a")},
		{Principal: "p", Tool: "t", Args: fp("a"), Plan: plan("A")},
		{Principal: "p", Tool: "t", Args: fp("a"), Plan: "abc"},
	} {
		if err := e.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error { return e.s.RecordDryRun(ctx, tx, bad) }); err == nil {
			t.Errorf("RecordDryRun(%+v) accepted", bad)
		}
	}
}

func TestDryRuns(t *testing.T) {
	eachStore(t, testDryRuns)
}

// TestDryRunsAppRole: the serving role records, replaces, trims, reads and reaps dry runs
// with what migration 00130 grants.
func TestDryRunsAppRole(t *testing.T) {
	testDryRuns(t, newEnv(t, storetest.Fixtures(pg)[1], storetest.AppRole(t, pg)))
}
