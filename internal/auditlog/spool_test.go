package auditlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

func openSpool(t *testing.T, path string, opts SpoolOptions) *Spool {
	t.Helper()
	s, err := OpenSpool(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func spoolLog(t *testing.T, db store.DB, s *Spool) *Log {
	t.Helper()
	l, err := New(db, testKey, Options{Spool: s})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// requestIDs lists the sealed events' request ids (the event name for a gap event), in
// chain order, after verifying the chain and the MACs.
func requestIDs(t *testing.T, l *Log) ([]string, []Event) {
	t.Helper()
	ctx := context.Background()
	rep, err := l.Verify(ctx)
	if err != nil || rep.Problem != nil || !rep.MACsChecked {
		t.Fatalf("Verify() = %v, %v; want OK", rep, err)
	}
	evs, err := l.Events(ctx, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range evs {
		if ev.Name == LostEvent {
			ids = append(ids, LostEvent)
			continue
		}
		ids = append(ids, ev.RequestID)
	}
	return ids, evs
}

// TestSpoolWhileStoreDown: with PostgreSQL stopped mid-test, low-tier events are answered
// (Keep returns nil) and kept in the spool; once the spool is full the rest are counted; when
// PostgreSQL is back, RunSpool appends them in order, then a gap event with the count and the
// times of the first and last lost, and the chain verifies.
//
// It stops the package's own cluster (pg, private): a top-level test that does not call
// t.Parallel runs alone, the parallel ones waiting until every sequential one is done, so no
// other test sees the server down. Starting a cluster of its own cost an initdb.
func TestSpoolWhileStoreDown(t *testing.T) {
	ctx := context.Background()
	db, err := postgres.Open(ctx, storetest.MigratedPostgres(t, pg), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	down := false
	t.Cleanup(func() { // the tests after this one need the server back, even when this one failed
		if down {
			pg.Start(t)
		}
	})
	s := openSpool(t, filepath.Join(t.TempDir(), SpoolFileName), SpoolOptions{MaxBytes: MinSpoolMaxBytes})
	l := spoolLog(t, db, s)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); l.RunSpool(runCtx, 50*time.Millisecond) }()
	defer func() { stop(); <-done }()

	var want []string
	keep := func(i int) error {
		ev := sampleEvent(i)
		err := l.Keep(ctx, ev)
		if err == nil {
			want = append(want, ev.RequestID)
		}
		return err
	}
	for i := range 2 {
		if err := keep(i); err != nil {
			t.Fatalf("Keep() with the store up = %v", err)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("spool holds %d records with the store up, want 0", s.Len())
	}

	pg.Stop(t)
	down = true
	for i := 2; i < 5; i++ {
		if err := keep(i); err != nil {
			t.Fatalf("Keep() with the store down = %v, want the event spooled", err)
		}
	}
	if s.Len() != 3 {
		t.Fatalf("spool holds %d records, want 3", s.Len())
	}
	// Fill the spool, then lose 5 more.
	i := 5
	for ; ; i++ {
		if err := keep(i); err != nil {
			if !errors.Is(err, ErrSpoolFull) {
				t.Fatalf("Keep() = %v, want ErrSpoolFull once full", err)
			}
			break
		}
	}
	firstLost := time.Now()
	lost := 1
	for range 5 {
		i++
		if err := keep(i); !errors.Is(err, ErrSpoolFull) {
			t.Fatalf("Keep() on a full spool = %v, want ErrSpoolFull", err)
		}
		lost++
	}
	lastLost := time.Now()
	want = append(want, LostEvent)
	t.Logf("%d events spooled, %d lost", s.Len(), lost)

	pg.Start(t)
	down = false
	deadline := time.Now().Add(20 * time.Second)
	for s.Len() > 0 || s.hasLost() {
		if time.Now().After(deadline) {
			t.Fatalf("the spool still holds %d records 20 s after the store came back", s.Len())
		}
		time.Sleep(20 * time.Millisecond)
	}
	i++
	if err := keep(i); err != nil {
		t.Fatalf("Keep() after the store came back = %v", err)
	}
	if s.Len() != 0 {
		t.Errorf("spool holds %d records with the store back, want 0", s.Len())
	}
	if _, err := l.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	got, evs := requestIDs(t, l)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events in the chain:\n%v\nwant, in the order they happened:\n%v", got, want)
	}
	rep, err := l.Verify(ctx)
	if wantOK := fmt.Sprintf(", %d lost to a full spool (see the audit.events.lost events)", lost); err != nil || rep.Lost != int64(lost) || !strings.HasSuffix(rep.String(), wantOK) {
		t.Errorf("Verify() = %q, %v; want it to end with %q", rep, err, wantOK)
	}
	var gap Event
	for _, ev := range evs {
		if ev.Name == LostEvent {
			gap = ev
		}
	}
	first, last := time.UnixMicro(gap.Details["firstLostUnixMicros"]), time.UnixMicro(gap.Details["lastLostUnixMicros"])
	if gap.Details["lostCount"] != int64(lost) || gap.Outcome != Failed || gap.FailureCode != "audit_spool_full" ||
		first.After(last) || first.After(firstLost) || last.Before(lastLost.Add(-time.Second)) || last.After(lastLost) {
		t.Errorf("gap event = %+v; want %d lost, first before %v, last up to %v", gap, lost, firstLost, lastLost)
	}
}

// TestSpoolTornTail: a spool whose last record a crash cut short or damaged is opened with
// that record dropped and logged, and the whole records before it are appended.
func TestSpoolTornTail(t *testing.T) {
	tests := []struct {
		name string
		tear func(b []byte, last int) []byte // the file and the offset of its last record
		kept int
	}{
		{"cut short", func(b []byte, last int) []byte { return b[:len(b)-7] }, 2},
		{"header cut short", func(b []byte, last int) []byte { return b[:last+5] }, 2},
		{"checksum mismatch", func(b []byte, last int) []byte { b[len(b)-3] ^= 0x20; return b }, 2},
		{"zero length", func(b []byte, last int) []byte { return append(b, 0, 0, 0, 0, 0, 0, 0, 0) }, 3},
		{"garbage appended", func(b []byte, last int) []byte { return append(b, "\x00\x00\x01\x00garbage"...) }, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			db := storetest.SQLite(t)
			path := filepath.Join(t.TempDir(), SpoolFileName)
			// The operator made the file, with a looser mode: the spool makes it 0600.
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := OpenSpool(path, SpoolOptions{})
			if err != nil {
				t.Fatal(err)
			}
			l := spoolLog(t, db, s)
			last := 0
			for i := range 3 {
				st, _ := os.Stat(path)
				last = int(st.Size())
				r, err := l.stamp(sampleEvent(i), time.Now())
				if err != nil {
					t.Fatal(err)
				}
				if err := s.add(&r); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tt.tear(b, last), 0o600); err != nil {
				t.Fatal(err)
			}

			var logs bytes.Buffer
			s = openSpool(t, path, SpoolOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if s.Len() != tt.kept {
				t.Errorf("Len() = %d after reopening, want %d", s.Len(), tt.kept)
			}
			if !strings.Contains(logs.String(), "torn or damaged record dropped") {
				t.Errorf("no log line about the torn record; logs: %s", logs.String())
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("spool file mode = %v, %v; want 0600", st.Mode().Perm(), err)
			}
			l = spoolLog(t, db, s)
			// A record added now follows the kept ones, not the dropped bytes.
			r, err := l.stamp(sampleEvent(9), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.add(&r); err != nil {
				t.Fatal(err)
			}
			if n, err := l.drainSpool(ctx); err != nil || n != tt.kept+1 {
				t.Fatalf("drainSpool() = %d, %v; want %d", n, err, tt.kept+1)
			}
			got, _ := requestIDs(t, l)
			want := append([]string{"req-000000", "req-000001", "req-000002"}[:tt.kept], "req-000009")
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("events = %v, want %v", got, want)
			}
		})
	}
}

// TestSpoolReplayAfterCrash: a crash after the store committed a batch but before the spool
// was truncated appends it again on the next start; the nonces make that a no-op, for events
// and for the gap event alike.
func TestSpoolReplayAfterCrash(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), SpoolFileName)
		s := openSpool(t, path, SpoolOptions{})
		l := spoolLog(t, db, s)
		for i := range 3 {
			r, err := l.stamp(sampleEvent(i), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := s.add(&r); err != nil {
				t.Fatal(err)
			}
		}
		s.mu.Lock()
		s.full = true // as if the bound had been reached
		s.mu.Unlock()
		for i := 3; i < 5; i++ {
			r, _ := l.stamp(sampleEvent(i), time.Now())
			if err := s.add(&r); !errors.Is(err, ErrSpoolFull) {
				t.Fatalf("add() to a full spool = %v", err)
			}
		}
		s.mu.Lock()
		err := s.flushLostLocked()
		s.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		before, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := l.drainSpool(ctx); err != nil || n != 4 {
			t.Fatalf("drainSpool() = %d, %v; want 3 events and a gap", n, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, before, 0o600); err != nil {
			t.Fatal(err)
		}
		s = openSpool(t, path, SpoolOptions{})
		l = spoolLog(t, db, s)
		if _, err := l.drainSpool(ctx); err != nil || s.Len() != 0 {
			t.Fatalf("drainSpool() again = %v, %d left", err, s.Len())
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		got, evs := requestIDs(t, l)
		if want := []string{"req-000000", "req-000001", "req-000002", LostEvent}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("events after the replay = %v, want %v (once each)", got, want)
		}
		if n := evs[len(evs)-1].Details["lostCount"]; n != 2 {
			t.Errorf("gap event lostCount = %d, want 2", n)
		}
	})
}

// TestSpoolIsExclusive: two processes sharing a data directory would interleave their spools.
func TestSpoolIsExclusive(t *testing.T) {
	path := filepath.Join(t.TempDir(), SpoolFileName)
	openSpool(t, path, SpoolOptions{})
	if s, err := OpenSpool(path, SpoolOptions{}); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		if s != nil {
			s.Close()
		}
		t.Errorf("second OpenSpool() = %v, want it refused", err)
	}
	if _, err := OpenSpool(filepath.Join(t.TempDir(), "s"), SpoolOptions{MaxBytes: 1000}); err == nil {
		t.Error("OpenSpool() with a 1000-byte bound succeeded")
	}
}

// TestSpoolDrainAsAppRole: the serving role can append the spool, also a batch it appended
// before (ON CONFLICT needs no privilege beyond INSERT).
func TestSpoolDrainAsAppRole(t *testing.T) {
	ctx := context.Background()
	app := appRoleDB(t)
	s := openSpool(t, filepath.Join(t.TempDir(), SpoolFileName), SpoolOptions{})
	l := spoolLog(t, app, s)
	r, err := l.stamp(sampleEvent(1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.add(&r); err != nil {
		t.Fatal(err)
	}
	if n, err := l.drainSpool(ctx); err != nil || n != 1 {
		t.Fatalf("drainSpool() as the app role = %d, %v", n, err)
	}
	if _, err := app.Exec(ctx, insertSQL(store.Postgres, 1, true), insertArgs(nil, &r, store.Postgres, 0)...); err != nil {
		t.Errorf("appending the same event again as the app role = %v, want it skipped", err)
	}
	if got, _ := requestIDs(t, l); fmt.Sprint(got) != "[req-000001]" {
		t.Errorf("events = %v, want the one event once", got)
	}
}

// FuzzSpoolOpen: whatever bytes a crash or a disk leaves in the spool file, OpenSpool neither
// panics nor fails; it keeps a prefix of whole records and the file holds exactly them.
func FuzzSpoolOpen(f *testing.F) {
	l, err := New(storetest.SQLite(f), testKey, Options{})
	if err != nil {
		f.Fatal(err)
	}
	var valid []byte
	for i := range 2 {
		r, _ := l.stamp(sampleEvent(i), time.Unix(1, 0))
		b, err := encodeEntry(spoolEntry{Event: &r.ev, Nonce: r.nonce, MAC: r.mac})
		if err != nil {
			f.Fatal(err)
		}
		valid = append(valid, b...)
	}
	lost, _ := encodeEntry(spoolEntry{Lost: &lostRun{Count: 3, First: 1, Last: 2, Nonce: make([]byte, nonceLen)}})
	f.Add(valid)
	f.Add(append(valid, lost...))
	f.Add(valid[:len(valid)-1])
	f.Add([]byte{0, 0, 0, 2, 0, 0, 0, 0, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	// go test -fuzz makes little headway in this package (the coverage of modernc's SQLite and
	// pgx weighs on every run), so the seeds themselves tear the file everywhere: cut at
	// every few bytes, and a byte flipped at every few.
	whole := append(bytes.Clone(valid), lost...)
	for i := 0; i < len(whole); i += 5 {
		f.Add(whole[:i])
	}
	for i := 0; i < len(whole); i += 13 {
		b := bytes.Clone(whole)
		b[i] ^= 0x41
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), SpoolFileName)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := OpenSpool(path, SpoolOptions{})
		if err != nil {
			t.Fatalf("OpenSpool() = %v", err)
		}
		defer s.Close()
		kept, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, kept) || int64(len(kept)) != s.size {
			t.Fatalf("kept %d bytes (size %d) that are not a prefix of the %d written", len(kept), s.size, len(b))
		}
		var off int64
		n := 0
		for off < int64(len(kept)) {
			_, size, err := readEntry(bytes.NewReader(kept), off)
			if err != nil {
				t.Fatalf("kept a damaged record at %d: %v", off, err)
			}
			off += size
			n++
		}
		if n != s.Len() {
			t.Fatalf("Len() = %d, the file holds %d records", s.Len(), n)
		}
		if bytes.HasPrefix(b, whole) && n < 3 {
			t.Fatalf("kept %d records of a file that starts with 3 whole ones", n)
		}
	})
}

// TestSpoolConcurrentAdds: callers adding at once share fsyncs while drains append and truncate
// the file under them; every event reaches the store once, each caller's in its order.
func TestSpoolConcurrentAdds(t *testing.T) {
	// The drains' bound, not the production one per batch: under -race on a loaded 2-core
	// machine a batch of 180 events took more than 5 s (CI, 2026-12-02).
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := storetest.SQLite(t)
	s := openSpool(t, filepath.Join(t.TempDir(), SpoolFileName), SpoolOptions{})
	l := spoolLog(t, db, s)
	const callers, each = 8, 40
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for i := range each {
				ev := sampleEvent(i)
				ev.RequestID = fmt.Sprintf("g%d-%03d", g, i)
				r, err := l.stamp(ev, time.Now())
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.add(&r); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for range 20 {
			if _, err := l.drainSpool(ctx); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	<-drained
	if _, err := l.drainSpool(ctx); err != nil || s.Len() != 0 {
		t.Fatalf("last drainSpool() = %v, %d left", err, s.Len())
	}
	if _, err := l.Seal(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ := requestIDs(t, l)
	if len(got) != callers*each {
		t.Fatalf("%d events in the store, want %d", len(got), callers*each)
	}
	next := map[string]int{}
	for _, id := range got {
		g, i, _ := strings.Cut(id, "-")
		if want := fmt.Sprintf("%03d", next[g]); i != want {
			t.Fatalf("caller %s: event %s where %s was due", g, i, want)
		}
		next[g]++
	}
}

// TestUnstorableRefusedUpFront: an event the store could never take is refused by Record,
// Keep and Append with ErrUnstorable before it can reach the store or the spool, also while
// the spool holds events (when Keep would not even try the store).
func TestUnstorableRefusedUpFront(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		s := openSpool(t, filepath.Join(t.TempDir(), SpoolFileName), SpoolOptions{})
		l := spoolLog(t, db, s)
		bad := map[string]func(*Event){
			"NUL in subject":          func(ev *Event) { ev.Subject = "alice\x00" },
			"NUL in client id":        func(ev *Event) { ev.ClientID = "\x00" },
			"invalid UTF-8 in actor":  func(ev *Event) { ev.Actor = "bot\xff" },
			"subject too long":        func(ev *Event) { ev.Subject = strings.Repeat("a", MaxFieldBytes+1) },
			"NUL in a detail name":    func(ev *Event) { ev.Details = map[string]int64{"a\x00": 1} },
			"acr too long":            func(ev *Event) { ev.ACR = strings.Repeat("é", MaxFieldBytes/2+1) },
			"NUL in the failure code": func(ev *Event) { ev.FailureCode = "x\x00" },
		}
		for name, edit := range bad {
			for _, spooled := range []bool{false, true} {
				ev := sampleEvent(1)
				edit(&ev)
				if spooled { // the spool holds an event: Keep would go straight to it
					r, err := l.stamp(sampleEvent(2), time.Now())
					if err != nil {
						t.Fatal(err)
					}
					if err := s.add(&r); err != nil {
						t.Fatal(err)
					}
				}
				before := s.Len()
				if err := l.Keep(ctx, ev); !errors.Is(err, ErrUnstorable) {
					t.Errorf("%s: Keep() = %v, want ErrUnstorable", name, err)
				}
				if err := l.Record(ctx, ev); !errors.Is(err, ErrUnstorable) {
					t.Errorf("%s: Record() = %v, want ErrUnstorable", name, err)
				}
				if s.Len() != before {
					t.Errorf("%s: the spool went from %d to %d records", name, before, s.Len())
				}
				if err := l.Keep(ctx, sampleEvent(3)); err != nil {
					t.Fatal(err)
				}
				if _, err := l.drainSpool(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestSpoolSetsAsideRefused: a spooled event the store refuses for what it holds (a NUL,
// which a spool of an older version can hold; a MAC the table's CHECK refuses) cannot hold
// back the events after it: it goes to the dead-letter file (0600), a gap event with
// RefusedCode takes its place in the chain, the chain verifies, and the spool empties.
func TestSpoolSetsAsideRefused(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		path := filepath.Join(t.TempDir(), SpoolFileName)
		s := openSpool(t, path, SpoolOptions{})
		l := spoolLog(t, db, s)
		for i := range 5 {
			r, err := l.stamp(sampleEvent(i), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			switch i {
			case 1:
				r.ev.Subject = "alice\x00" // as spooled before Keep refused it
			case 3:
				r.mac = r.mac[:5] // passes validate; the store's CHECK refuses it
			}
			if err := s.add(&r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.drainSpool(ctx); err != nil {
			t.Fatalf("drainSpool() = %v, want the refused events set aside", err)
		}
		if s.Len() != 0 {
			t.Errorf("spool holds %d records after the drain, want 0", s.Len())
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		got, evs := requestIDs(t, l)
		want := []string{"req-000000", LostEvent, "req-000002", LostEvent, "req-000004"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("events = %v, want %v", got, want)
		}
		for _, i := range []int{1, 3} {
			if ev := evs[i]; ev.FailureCode != RefusedCode || ev.Details["lostCount"] != 1 {
				t.Errorf("gap event %d = %s %v, want %s with lostCount 1", i, ev.FailureCode, ev.Details, RefusedCode)
			}
		}
		dead, err := os.Open(path + DeadLetterSuffix)
		if err != nil {
			t.Fatal(err)
		}
		defer dead.Close()
		st, _ := dead.Stat()
		if st.Mode().Perm() != 0o600 {
			t.Errorf("dead-letter file mode = %v, want 0600", st.Mode().Perm())
		}
		var ids []string
		for off := int64(0); off < st.Size(); {
			e, n, err := readEntry(dead, off)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.Event.RequestID)
			off += n
		}
		if fmt.Sprint(ids) != "[req-000001 req-000003]" {
			t.Errorf("dead-letter file holds %v, want [req-000001 req-000003]", ids)
		}

		// A batch that passes every rule here and that the store alone refuses (its CHECK on
		// the MAC) is retried one by one too.
		for i := 5; i < 7; i++ {
			r, err := l.stamp(sampleEvent(i), time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if i == 5 {
				r.mac = r.mac[:5]
			}
			if err := s.add(&r); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.drainSpool(ctx); err != nil || s.Len() != 0 {
			t.Fatalf("drainSpool() = %v, %d left; want the refused event set aside", err, s.Len())
		}
		if _, err := l.Seal(ctx); err != nil {
			t.Fatal(err)
		}
		got, _ = requestIDs(t, l)
		if want := append(want, LostEvent, "req-000006"); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("events = %v, want %v", got, want)
		}
		if n := s.SetAside(); n != 3 {
			t.Errorf("SetAside() = %d, want 3", n)
		}
	})
}

// TestSpoolRefusesUnsafeFiles: the spool, its temporary file and the dead-letter file are
// never opened through a symbolic link, and a symbolic link or a non-regular file at the
// spool's path stops OpenSpool with an error naming the path, the target untouched.
func TestSpoolRefusesUnsafeFiles(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(target, []byte("not a spool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, SpoolFileName)
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenSpool(link, SpoolOptions{}); err == nil || !strings.Contains(err.Error(), link) || !strings.Contains(err.Error(), "symbolic link") {
		if s != nil {
			s.Close()
		}
		t.Errorf("OpenSpool(symlink) = %v, want an error naming %s as a symbolic link", err, link)
	}
	if b, _ := os.ReadFile(target); string(b) != "not a spool\n" {
		t.Errorf("the link's target now holds %q", b)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o644 {
		t.Errorf("the link's target is now mode %v", st.Mode().Perm())
	}
	sub := filepath.Join(dir, "d")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	if s, err := OpenSpool(sub, SpoolOptions{}); err == nil {
		s.Close()
		t.Error("OpenSpool(a directory) succeeded")
	}

	// The dead-letter file through a symbolic link is refused too, and the spool waits.
	path := filepath.Join(t.TempDir(), SpoolFileName)
	s := openSpool(t, path, SpoolOptions{})
	if err := os.Symlink(target, path+DeadLetterSuffix); err != nil {
		t.Fatal(err)
	}
	l := spoolLog(t, storetest.SQLite(t), s)
	r, _ := l.stamp(sampleEvent(1), time.Now())
	r.ev.Subject = "x\x00"
	if err := s.add(&r); err != nil {
		t.Fatal(err)
	}
	if _, err := l.drainSpool(context.Background()); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("drainSpool() with a symlinked dead-letter file = %v, want it refused", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "not a spool\n" || s.Len() != 1 {
		t.Errorf("target = %q, spool = %d records; want both untouched", b, s.Len())
	}
}
