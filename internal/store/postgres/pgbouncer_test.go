package postgres_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits"
	limitspg "github.com/cobranca/cobranca/internal/limits/postgres"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestPgBouncerTransactionPooling runs the server's database work through Debian's PgBouncer
// in transaction pooling mode (pgtest.PgBouncer: two server connections) from more clients
// than that, as COBRANCA_DATABASE_POOLER=transaction does (docs/operations.md, PgBouncer):
// pgx with default_query_exec_mode=cache_describe, River polling for jobs, the limiter's pool
// without its session parameter. Each of 12 clients, at once, reserves an idempotency key
// (its transaction-scoped advisory lock), appends an audit event and enqueues an e-mail in one
// transaction, then replays the key; all spend a shared rate limit; the outbox delivers every
// message; the audit chain is sealed and verifies; no server connection is left listening
// (River's LISTEN, without poll-only, stays on one). With pgx's default (named prepared
// statements) the same work fails: a statement prepared on one server connection is not on
// the next.
func TestPgBouncerTransactionPooling(t *testing.T) {
	ctx := t.Context()
	cluster := pgtest.New()
	t.Cleanup(cluster.Close)
	direct := storetest.MigratedPostgres(t, cluster)
	pooled := cluster.PgBouncer(t, direct, 2)

	db, err := postgres.Open(ctx, pooled, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	lim, err := limitspg.Open(ctx, pooled, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lim.Close)
	key := []byte("an audit key of at least thirty-two bytes, for the test")
	audit, err := auditlog.New(db, key, auditlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	idem, err := idempotency.New(store.Postgres, time.Hour, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	mail := smtptest.Start(t, smtptest.Options{})
	ob := outboxtest.Deliver(t, db, mail, outbox.Config{PollOnly: true, Workers: 4})

	const clients = 12
	budget := limits.Limit{Rate: clients, Period: time.Hour, Burst: clients}
	var wg sync.WaitGroup
	errs := make(chan error, 4*clients)
	allowed := make(chan bool, 2*clients)
	for i := range clients {
		wg.Go(func() {
			k := idempotency.Key{Principal: "user-" + fmt.Sprint(i), Tool: "send_reminder", Key: "k"}
			fp := sha256.Sum256([]byte(k.Principal))
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				r, err := idem.Begin(ctx, tx, k, fp[:])
				if err != nil {
					return err
				}
				if r.State != idempotency.Fresh {
					return fmt.Errorf("first call of %s: %v, want fresh", k.Principal, r.State)
				}
				if err := audit.Append(ctx, tx, auditlog.Event{Name: "collections.reminder.sent", Tool: k.Tool, Risk: "write",
					Subject: k.Principal, RequestID: fmt.Sprint("r", i), Outcome: auditlog.Allowed}); err != nil {
					return err
				}
				if _, err := ob.Enqueue(ctx, tx, outbox.Message{To: fmt.Sprintf("debtor%d@example.com", i), Subject: "Lembrete", Text: "Olá", Ref: fmt.Sprint("draft-", i)}); err != nil {
					return err
				}
				return idem.Complete(ctx, tx, k, fp[:], []byte("sent"))
			})
			if err != nil {
				errs <- err
				return
			}
			err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				r, err := idem.Begin(ctx, tx, k, fp[:])
				if err == nil && (r.State != idempotency.Replay || string(r.Response) != "sent") {
					err = fmt.Errorf("replay of %s: %v %q, want the stored answer", k.Principal, r.State, r.Response)
				}
				return err
			})
			if err != nil {
				errs <- err
			}
			for range 2 {
				d, err := lim.Take(ctx, "shared", budget)
				if err != nil {
					errs <- err
					return
				}
				allowed <- d.Allowed
			}
		})
	}
	wg.Wait()
	close(errs)
	close(allowed)
	for err := range errs {
		t.Error(err)
	}
	n := 0
	for a := range allowed {
		if a {
			n++
		}
	}
	if n != clients {
		t.Errorf("%d of %d decisions allowed, want the burst, %d", n, 2*clients, clients)
	}
	if got := mail.Wait(t, clients, 30*time.Second); len(got) != clients {
		t.Errorf("%d messages delivered, want %d", len(got), clients)
	}
	// Sealed through the pooler too (the sealer's lock is transaction-scoped): every event
	// committed, not only those a background pass happened to reach.
	if _, err := audit.SealCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := audit.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Problem != nil || rep.Count != clients {
		t.Errorf("audit chain: %d events verified, problem %v; want %d and none", rep.Count, rep.Problem, clients)
	}

	// Nothing left session state on the pooler's server connections: two transactions open at
	// once hold both, and neither listens on a channel (River, unless poll-only, LISTENs on one
	// and leaves it to whichever client gets the connection next).
	var listening [2]int
	var held sync.WaitGroup
	held.Add(2)
	for i := range listening {
		wg.Go(func() {
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				err := tx.QueryRow(ctx, "SELECT count(*) FROM pg_listening_channels()").Scan(&listening[i])
				held.Done()
				held.Wait() // until the other transaction holds the other connection
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if listening != [2]int{} {
		t.Errorf("server connections listen on %v channels, want none", listening)
	}

	// The pooler is what makes the exec mode matter: pgx's default fails through it.
	prepared, err := postgres.Open(ctx, strings.Replace(pooled, "default_query_exec_mode=cache_describe", "default_query_exec_mode=cache_statement", 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer prepared.Close()
	var failed bool
	var mu sync.Mutex
	for range clients {
		wg.Go(func() {
			for range 20 {
				var one int
				if err := prepared.QueryRow(ctx, "SELECT 1 WHERE $1::int > 0", 1).Scan(&one); err != nil {
					mu.Lock()
					failed = true
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if !failed {
		t.Error("named prepared statements worked through the pooler: is it in transaction mode?")
	}
}
