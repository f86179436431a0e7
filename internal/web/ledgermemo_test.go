package web

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/cobranca/cobranca/internal/ledger"
)

// fakeReads is the ledger charts' read for ledgerMemo's tests: each read blocks until the test
// lets it end with what it says, and is counted.
type fakeReads struct {
	reads   atomic.Int64
	release chan error // the next read's answer: nil, its numbers; else its failure
}

func (f *fakeReads) read(ctx context.Context, asOf string) ([]ledger.Aging, []ledger.CashWeeks, error) {
	n := f.reads.Add(1)
	select {
	case err := <-f.release:
		if err != nil {
			return nil, nil, err
		}
		// The read's number is its open amount: which read a page shows.
		a := ledger.Aging{Currency: "BRL"}
		a.Buckets[0].OpenCents = n
		return []ledger.Aging{a}, nil, nil
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
}

func readNumber(c ledgerCharts) int64 {
	if len(c.aging) == 0 {
		return 0
	}
	return c.aging[0].Buckets[0].OpenCents
}

// TestLedgerMemo: the first pages wait for the first read; then a page never waits for a read:
// a minute later it is shown the last numbers while one read, however many pages ask, runs in
// the background; a failed read keeps the last numbers; the reader stops with its context.
func TestLedgerMemo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeReads{release: make(chan error)}
		m := &ledgerMemo{read: f.read, now: time.Now, log: slog.New(slog.DiscardHandler), wake: make(chan struct{}, 1), done: make(chan struct{})}
		ctx, stop := context.WithCancel(t.Context())
		stopped := make(chan struct{})
		go func() { defer close(stopped); m.run(ctx) }()

		// Cold: the pages wait for the first read, and get its numbers.
		var wg sync.WaitGroup
		got := make([]int64, 3)
		for i := range got {
			wg.Go(func() {
				c, err := m.charts(t.Context(), time.Now())
				if err != nil {
					t.Errorf("a cold page: %v", err)
				}
				got[i] = readNumber(c)
			})
		}
		synctest.Wait()
		f.release <- nil
		wg.Wait()
		if got[0] != 1 || got[1] != 1 || got[2] != 1 {
			t.Errorf("the cold pages show reads %v, want the first read's for each", got)
		}

		// Fresh: no read.
		time.Sleep(ledgerMemoAge - time.Second)
		if c, err := m.charts(t.Context(), time.Now()); err != nil || readNumber(c) != 1 {
			t.Errorf("59 s later: read %d, %v; want the first, no read", readNumber(c), err)
		}
		synctest.Wait()
		if n := f.reads.Load(); n != 1 {
			t.Errorf("59 s later: %d reads, want 1", n)
		}

		// Stale: every page is shown the first read's numbers at once while one read runs.
		time.Sleep(2 * time.Second)
		for range 5 {
			if c, err := m.charts(t.Context(), time.Now()); err != nil || readNumber(c) != 1 {
				t.Errorf("a minute later: read %d, %v; want the first's at once", readNumber(c), err)
			}
		}
		synctest.Wait()
		if n := f.reads.Load(); n != 2 {
			t.Errorf("five pages a minute later: %d reads, want 2 (one more, in the background)", n)
		}
		f.release <- nil
		synctest.Wait()
		if c, err := m.charts(t.Context(), time.Now()); err != nil || readNumber(c) != 2 {
			t.Errorf("after the background read: read %d, %v; want the second", readNumber(c), err)
		}
		if n := f.reads.Load(); n != 2 {
			t.Errorf("after the background read: %d reads, want 2 (the pages that asked while it ran are answered by it)", n)
		}

		// A failed read keeps the last numbers.
		time.Sleep(ledgerMemoAge)
		m.charts(t.Context(), time.Now())
		synctest.Wait()
		f.release <- errors.New("the store is down")
		synctest.Wait()
		if c, err := m.charts(t.Context(), time.Now()); err != nil || readNumber(c) != 2 {
			t.Errorf("after a failed read: read %d, %v; want the second's, kept", readNumber(c), err)
		}

		stop()
		synctest.Wait()
		select {
		case <-stopped:
		default:
			t.Error("the reader runs on after its context ended")
		}
	})
}

// TestLedgerMemoColdFailure: a page that finds no numbers waits for the read, and is told
// when it fails.
func TestLedgerMemoColdFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeReads{release: make(chan error)}
		m := &ledgerMemo{read: f.read, now: time.Now, log: slog.New(slog.DiscardHandler), wake: make(chan struct{}, 1), done: make(chan struct{})}
		ctx, stop := context.WithCancel(t.Context())
		defer stop()
		go m.run(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := m.charts(t.Context(), time.Now())
			errc <- err
		}()
		synctest.Wait()
		down := errors.New("the store is down")
		f.release <- down
		if err := <-errc; !errors.Is(err, down) {
			t.Errorf("a cold page after a failed read: %v, want %v", err, down)
		}
		stop()
		synctest.Wait()
	})
}
