package auditlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// pg is a cluster of this package's own, never the run's shared server: the tests verify
// the audit chain, and on PostgreSQL the sealer seals only events older than the server's
// oldest running transaction (pg_snapshot_xmin), which is server-wide. Another package's
// transaction held open on a shared server would leave their events unsealed.
var pg = pgtest.Private()

func TestMain(m *testing.M) { pg.Run(m) }

// eachStore runs fn against a fresh, migrated database of each dialect.
func eachStore(t *testing.T, fn func(t *testing.T, f storetest.Fixture, db store.DB)) {
	t.Helper()
	for _, f := range storetest.Fixtures(pg) {
		t.Run(string(f.Dialect), func(t *testing.T) {
			t.Parallel()
			fn(t, f, f.Migrated(t))
		})
	}
}

// fixedClock is the SQLite clock in tests, so event times are known exactly there.
var fixedTime = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// testKey is the audit key of the tests' logs.
var testKey = []byte("0123456789abcdef0123456789abcdef")

func newLog(t testing.TB, db store.DB) *Log {
	t.Helper()
	l, err := New(db, testKey, Options{Now: func() time.Time { return fixedTime }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func sampleEvent(i int) Event {
	return Event{
		Name:         "collections.portfolio.analyzed",
		Tool:         "collections.analyze_portfolio",
		Risk:         "low",
		Subject:      fmt.Sprintf("user-%d", i),
		Actor:        "agent-7",
		ClientID:     "client-9",
		ACR:          "urn:example:acr:mfa",
		RequestID:    fmt.Sprintf("req-%06d", i),
		Outcome:      Denied,
		FailureCode:  "forbidden",
		ArgsDigest:   fmt.Sprintf("%064x", i),
		ResultDigest: fmt.Sprintf("%064x", i+1),
		Duration:     time.Duration(i+1) * 1500 * time.Microsecond,
		Details:      map[string]int64{"invoiceCount": int64(500 + i), "accountCount": int64(i)},
	}
}

// appendN records n sample events and seals them.
func appendN(t *testing.T, l *Log, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := l.Record(ctx, sampleEvent(i)); err != nil {
			t.Fatalf("Record #%d: %v", i, err)
		}
	}
	if _, err := l.Seal(ctx); err != nil {
		t.Fatalf("Seal: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
	}{
		{"every field", sampleEvent(1)},
		{"only what is required", Event{Name: "collections.test.ran", Outcome: Allowed}},
		{"unicode and empty details", Event{Name: "x.y", Outcome: RateLimited, Subject: "usuário-ç", Details: map[string]int64{}}},
		{"extreme counts", Event{Name: "x.y", Outcome: Failed, Details: map[string]int64{"min": -1 << 63, "max": 1<<63 - 1}, Duration: 90 * time.Minute}},
	}
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		before := time.Now().Add(-time.Second)
		for _, tt := range tests {
			if err := l.Record(ctx, tt.ev); err != nil {
				t.Fatalf("Record(%s): %v", tt.name, err)
			}
		}
		if n, err := l.Seal(ctx); err != nil || n != len(tests) {
			t.Fatalf("Seal() = %d, %v; want %d", n, err, len(tests))
		}
		after := time.Now().Add(time.Second)
		got, err := l.Events(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(tests) {
			t.Fatalf("Events() returned %d events, want %d", len(got), len(tests))
		}
		for i, tt := range tests {
			want := tt.ev
			want.Seq = int64(i + 1)
			want.ServerTime = fixedTime.Truncate(time.Microsecond) // the log's clock, on both
			if len(want.Details) == 0 {
				want.Details = nil
			}
			if diff := cmp.Diff(want, got[i], cmpopts.IgnoreFields(Event{}, "Time")); diff != "" {
				t.Errorf("%s: event round trip (-want +got):\n%s", tt.name, diff)
			}
			switch f.Dialect {
			case store.SQLite:
				if !got[i].Time.Equal(fixedTime.Truncate(time.Microsecond)) {
					t.Errorf("%s: Time = %v, want the log's clock %v", tt.name, got[i].Time, fixedTime)
				}
			case store.Postgres:
				if got[i].Time.Before(before) || got[i].Time.After(after) {
					t.Errorf("%s: Time = %v, want the database clock, between %v and %v", tt.name, got[i].Time, before, after)
				}
			}
		}
		if rep, err := l.Verify(ctx); err != nil || rep.Problem != nil || rep.Count != int64(len(tests)) {
			t.Errorf("Verify() = %v, %v; want OK with %d events", rep, err, len(tests))
		}
	})
}

func TestAppendValidates(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		l := newLog(t, db)
		for _, ev := range []Event{
			{Outcome: Allowed},
			{Name: "x.y"},
			{Name: "x.y", Outcome: Allowed, Duration: -time.Second},
			{Name: "x.y", Outcome: Allowed, Details: map[string]int64{"": 1}},
		} {
			if err := l.Record(context.Background(), ev); err == nil {
				t.Errorf("Record(%+v) = nil, want an error", ev)
			}
		}
	})
}

// TestConcurrentWritersChain runs 16 writers × 200 events (× 50 under
// -short: as many writers racing, a quarter of the rounds), each Record a
// single INSERT ("direct") or through RunWriter's group commit ("grouped").
func TestConcurrentWritersChain(t *testing.T) {
	for _, grouped := range []bool{false, true} {
		name := "direct"
		if grouped {
			name = "grouped"
		}
		t.Run(name, func(t *testing.T) { testConcurrentWritersChain(t, grouped) })
	}
}

func testConcurrentWritersChain(t *testing.T, grouped bool) {
	const writers = 16
	each := 200
	if testing.Short() {
		each = 50
	}
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		sealCtx, stopSealer := context.WithCancel(ctx)
		sealerDone := make(chan struct{})
		go func() { l.RunSealer(sealCtx, 5*time.Millisecond); close(sealerDone) }()
		if grouped {
			writerCtx, stopWriter := context.WithCancel(ctx)
			writerDone := make(chan struct{})
			go func() { l.RunWriter(writerCtx); close(writerDone) }()
			defer func() { stopWriter(); <-writerDone }()
			for !l.writerUp.Load() {
				time.Sleep(time.Millisecond)
			}
		}

		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					ev := sampleEvent(i)
					ev.RequestID = fmt.Sprintf("w%02d-%03d", w, i)
					if err := l.Record(ctx, ev); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		stopSealer()
		<-sealerDone
		close(errs)
		for err := range errs {
			t.Fatalf("Record: %v", err)
		}

		rep, err := l.Verify(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Problem != nil || rep.Count != int64(writers*each) || rep.Head.Seq != int64(writers*each) {
			t.Fatalf("Verify() = %v, want OK with %d events", rep, writers*each)
		}
		seen := map[string]int64{}
		for after := int64(0); ; {
			evs, err := l.Events(ctx, after, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) == 0 {
				break
			}
			for _, ev := range evs {
				if ev.Seq != after+1 {
					t.Fatalf("seq %d follows %d", ev.Seq, after)
				}
				after = ev.Seq
				if prev, dup := seen[ev.RequestID]; dup {
					t.Fatalf("request %s sealed twice, at %d and %d", ev.RequestID, prev, ev.Seq)
				}
				seen[ev.RequestID] = ev.Seq
			}
		}
		if len(seen) != writers*each {
			t.Errorf("%d distinct events sealed, want %d", len(seen), writers*each)
		}
	})
}

func TestRollbackLeavesNoTrace(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		l := newLog(t, db)
		appendN(t, l, 3)
		errEffect := errors.New("the effect failed")
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			if err := l.Append(ctx, tx, sampleEvent(100)); err != nil {
				return err
			}
			if err := l.Append(ctx, tx, sampleEvent(101)); err != nil {
				return err
			}
			return errEffect
		})
		if !errors.Is(err, errEffect) {
			t.Fatalf("InTx = %v, want %v", err, errEffect)
		}
		appendN(t, l, 2)
		rep, err := l.Verify(ctx)
		if err != nil || rep.Problem != nil || rep.Count != 5 {
			t.Fatalf("Verify() = %v, %v; want OK with 5 events", rep, err)
		}
		evs, err := l.Events(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if ev.RequestID == sampleEvent(100).RequestID || ev.RequestID == sampleEvent(101).RequestID {
				t.Errorf("event %s of the rolled-back transaction was sealed at %d", ev.RequestID, ev.Seq)
			}
		}
	})
}

// TestOpenTransactionHoldsBackSealing shows sealing in commit order on PostgreSQL: while a
// transaction that wrote an event is open, no later event is sealed ahead of it.
func TestOpenTransactionHoldsBackSealing(t *testing.T) {
	f := storetest.Fixtures(pg)[1]
	db := f.Migrated(t)
	ctx := context.Background()
	l := newLog(t, db)
	appendN(t, l, 1)

	inTx := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			ev := sampleEvent(0)
			ev.RequestID = "slow"
			if err := l.Append(ctx, tx, ev); err != nil {
				return err
			}
			close(inTx)
			<-release
			return nil
		})
	}()
	<-inTx
	fast := sampleEvent(0)
	fast.RequestID = "fast"
	if err := l.Record(ctx, fast); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Seal(ctx); err != nil || n != 0 {
		t.Errorf("Seal() with an older transaction open = %d, %v; want 0 sealed", n, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n, err := l.Seal(ctx); err != nil || n != 2 {
		t.Errorf("Seal() after it committed = %d, %v; want 2", n, err)
	}
	evs, err := l.Events(ctx, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ev := range evs {
		order = append(order, ev.RequestID)
	}
	if diff := cmp.Diff([]string{"slow", "fast"}, order); diff != "" {
		t.Errorf("sealed order (-want +got):\n%s", diff)
	}
}
