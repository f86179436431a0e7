package storetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// traced returns a context under a recording span, and the recorder of the
// spans started under it.
func traced(t *testing.T) (context.Context, *tracetest.SpanRecorder) {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, parent := tp.Tracer("test").Start(context.Background(), "parent")
	t.Cleanup(func() { parent.End() })
	return ctx, sr
}

// queries counts the store.query spans started and ended so far, and returns
// the ended ones.
func queries(sr *tracetest.SpanRecorder) (started int, ended []sdktrace.ReadOnlySpan) {
	for _, s := range sr.Started() {
		if s.Name() == store.SpanQuery {
			started++
		}
	}
	for _, s := range sr.Ended() {
		if s.Name() == store.SpanQuery {
			ended = append(ended, s)
		}
	}
	return started, ended
}

// checkQuerySpan checks that exactly one store.query span was started and
// ended, failed or not as wantFailed says, with no driver text on it: its
// status and attributes say only "error", and it has no events (an error
// recorded as an event would carry the driver's message).
func checkQuerySpan(t *testing.T, sr *tracetest.SpanRecorder, wantFailed bool, driverErr error) {
	t.Helper()
	started, ended := queries(sr)
	if started != 1 || len(ended) != 1 {
		t.Fatalf("store.query spans: %d started, %d ended; want 1 and 1", started, len(ended))
	}
	s := ended[0]
	st := s.Status()
	if wantFailed {
		if st.Code != codes.Error || st.Description != "error" {
			t.Errorf("span status %v %q, want Error \"error\"", st.Code, st.Description)
		}
	} else if st.Code != codes.Unset {
		t.Errorf("span status %v %q, want Unset", st.Code, st.Description)
	}
	if n := len(s.Events()); n != 0 {
		t.Errorf("span has %d events, want none", n)
	}
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case "db.system.name", "cobranca.code":
		default:
			t.Errorf("span attribute %s=%s, want only db.system.name and cobranca.code", kv.Key, kv.Value.String())
		}
		if driverErr != nil && strings.Contains(kv.Value.String(), driverErr.Error()) {
			t.Errorf("span attribute %s=%q holds the driver's text", kv.Key, kv.Value.String())
		}
	}
	if driverErr != nil {
		t.Logf("driver's error: %v", driverErr)
		if strings.Contains(st.Description, driverErr.Error()) {
			t.Errorf("span status %q holds the driver's text", st.Description)
		}
	}
}

// TestQueryRowSpan: outside a transaction a QueryRow's span ends in the row's
// Scan, not before (pgx runs the query there; both drivers report its errors
// there), failed when Scan fails, with no driver text, and not when the
// answer is no row.
func TestQueryRowSpan(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		db := f.Open(t, f.NewDatabase(t))

		t.Run("ends at Scan", func(t *testing.T) {
			ctx, sr := traced(t)
			r := db.QueryRow(ctx, `SELECT 41 + 1`)
			if started, ended := queries(sr); started != 1 || len(ended) != 0 {
				// Not Fatal: the row must be scanned, or pgx keeps its connection.
				t.Errorf("before Scan: %d store.query spans started, %d ended; want 1 and 0", started, len(ended))
			}
			var n int64
			if err := r.Scan(&n); err != nil || n != 42 {
				t.Fatalf("Scan = %d, %v", n, err)
			}
			checkQuerySpan(t, sr, false, nil)
			// A second Scan does not end the span again.
			_ = r.Scan(&n)
			checkQuerySpan(t, sr, false, nil)
		})

		t.Run("scan error", func(t *testing.T) {
			ctx, sr := traced(t)
			var n int64
			err := db.QueryRow(ctx, `SELECT 'not a number'`).Scan(&n)
			if err == nil {
				t.Fatal("scanning text into an int64: no error")
			}
			checkQuerySpan(t, sr, true, err)
		})

		t.Run("query error at Scan", func(t *testing.T) {
			// A runtime error of the statement itself, reported at Scan:
			// PostgreSQL's division by zero; SQLite divides by zero into
			// NULL, but abs of the smallest integer overflows.
			q := `SELECT 1/$1::int`
			arg := any(0)
			if f.Dialect == store.SQLite {
				q, arg = `SELECT abs($1)`, int64(-1<<63)
			}
			ctx, sr := traced(t)
			var n int64
			err := db.QueryRow(ctx, q, arg).Scan(&n)
			if err == nil {
				t.Fatal("a failing statement: no error")
			}
			checkQuerySpan(t, sr, true, err)
		})

		t.Run("no rows", func(t *testing.T) {
			ctx, sr := traced(t)
			var n int64
			if err := db.QueryRow(ctx, `SELECT 1 WHERE 1 = 0`).Scan(&n); !errors.Is(err, store.ErrNoRows) {
				t.Fatalf("Scan = %v, want store.ErrNoRows", err)
			}
			checkQuerySpan(t, sr, false, nil)
		})

		t.Run("none in a transaction", func(t *testing.T) {
			ctx, sr := traced(t)
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				var n int64
				if err := tx.QueryRow(ctx, `SELECT 1`).Scan(&n); err != nil {
					return err
				}
				return tx.QueryRow(ctx, `SELECT 2`).Scan(&n)
			})
			if err != nil {
				t.Fatal(err)
			}
			if started, _ := queries(sr); started != 0 {
				t.Errorf("%d store.query spans inside a transaction, want 0", started)
			}
		})
	})
}

// TestQuerySpan: outside a transaction a Query's span ends when its rows are
// closed, once however many times they are, failed when the rows' iteration
// failed (a statement that fails part way through its rows), with no driver
// text.
func TestQuerySpan(t *testing.T) {
	eachStore(t, func(t *testing.T, f storetest.Fixture) {
		db := f.Open(t, f.NewDatabase(t))
		series := `SELECT x FROM generate_series(1, 5) x`
		// The third row fails: PostgreSQL divides by zero; SQLite's abs of
		// the smallest integer overflows (its division by zero is NULL).
		failing := `SELECT 1/(x-3) FROM generate_series(1, 5) x`
		if f.Dialect == store.SQLite {
			series = `WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s WHERE x < 5) SELECT x FROM s`
			failing = `WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s WHERE x < 5)
SELECT abs(CASE WHEN x = 3 THEN $1 ELSE x END) FROM s`
		}

		t.Run("ends at Close", func(t *testing.T) {
			ctx, sr := traced(t)
			rows, err := db.Query(ctx, series)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close() // also when the test fails: pgx holds an open Rows' connection
			var got []int64
			for rows.Next() {
				var n int64
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				got = append(got, n)
				if started, ended := queries(sr); started != 1 || len(ended) != 0 {
					t.Fatalf("reading row %d: %d store.query spans started, %d ended; want 1 and 0", n, started, len(ended))
				}
			}
			if err := rows.Err(); err != nil || len(got) != 5 {
				t.Fatalf("rows %v, %v", got, err)
			}
			rows.Close()
			checkQuerySpan(t, sr, false, nil)
			rows.Close()
			checkQuerySpan(t, sr, false, nil)
		})

		t.Run("closed early", func(t *testing.T) {
			ctx, sr := traced(t)
			rows, err := db.Query(ctx, series)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close() // also when the test fails: pgx holds an open Rows' connection
			if !rows.Next() {
				t.Fatal(rows.Err())
			}
			if started, ended := queries(sr); started != 1 || len(ended) != 0 {
				t.Errorf("before Close: %d store.query spans started, %d ended; want 1 and 0", started, len(ended))
			}
			rows.Close()
			checkQuerySpan(t, sr, false, nil)
		})

		t.Run("fails part way", func(t *testing.T) {
			ctx, sr := traced(t)
			var args []any
			if f.Dialect == store.SQLite {
				args = []any{int64(-1 << 63)}
			}
			rows, err := db.Query(ctx, failing, args...)
			if err != nil {
				t.Fatalf("Query = %v; want the failure while reading the rows", err)
			}
			defer rows.Close()
			read := 0
			for rows.Next() {
				var n int64
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				read++
			}
			err = rows.Err()
			if err == nil || read != 2 {
				t.Fatalf("%d rows read, then %v; want 2 and an error", read, err)
			}
			rows.Close()
			rows.Close()
			checkQuerySpan(t, sr, true, err)
		})

		t.Run("scan error", func(t *testing.T) {
			ctx, sr := traced(t)
			rows, err := db.Query(ctx, `SELECT 'not a number'`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			if !rows.Next() {
				t.Fatal(rows.Err())
			}
			var n int64
			err = rows.Scan(&n)
			if err == nil {
				t.Fatal("scanning text into an int64: no error")
			}
			rows.Close()
			checkQuerySpan(t, sr, true, err)
		})
	})
}
