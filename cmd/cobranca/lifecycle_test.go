package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/reminders/reminderstest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/tier"
)

// exited waits for p to exit in the background: the channel gets its exit status.
func exited(p *serveProcess) <-chan int {
	c := make(chan int, 1)
	go func() { c <- p.wait() }()
	return c
}

// TestServeSIGTERMSlowCall: `cobranca serve` (a process of its own, on PostgreSQL) gets SIGTERM
// while a call is in flight — prepare_reminder, held up by a lock the test keeps on the drafts'
// table. At once /readyz answers 503 (a load balancer drains the replica) and a new call is
// refused with 503 unavailable, while the process goes on: the call in flight is not cut.
// When the lock goes, the call completes with its real answer (its draft is in the store), and
// the process exits 0.
func TestServeSIGTERMSlowCall(t *testing.T) {
	tier.EndToEnd(t)
	cluster := pgtest.New()
	t.Cleanup(cluster.Close)
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_DATABASE_URL=" + cluster.Database(t), "COBRANCA_RATE_STORE_TIMEOUT=5s"}
	db := migratedStore(t, environ)
	agent := strings.TrimSpace(mustRun(t, environ, "token", "--sub", "alice", "--agent", "collector-bot", "--scope", "reminders:write"))
	server := startServeProcess(t, environ, addr)
	sess := connect(t, addr, agent, nil)

	// The test's transaction holds the drafts' table: a draft's INSERT waits for it.
	locked, unlock, unlocked := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		unlocked <- db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			if _, err := tx.Exec(ctx, `LOCK TABLE reminder_draft IN EXCLUSIVE MODE`); err != nil {
				return err
			}
			close(locked)
			<-unlock
			return nil
		})
	}()
	var once sync.Once
	release := func() { once.Do(func() { close(unlock) }) }
	defer release() // before the store closes (a cleanup), which waits for the transaction's connection
	<-locked
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	call := make(chan answer, 1)
	go func() {
		res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "collections.prepare_reminder",
			Arguments: prepareArgs("c-slow", "slow@cliente.example", "slow-1")})
		call <- answer{res, err}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var waiting int
		if err := db.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the call never waited for the lock")
		}
	}

	term := time.Now()
	server.terminate(t)
	exit := exited(server)
	var unready time.Duration
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if code, _ := server.ready(); code == http.StatusServiceUnavailable {
			unready = time.Since(term)
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not answer 503 within 5 s of SIGTERM")
		}
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+agent)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("a new request while draining: %v, want 503 from the listener still open", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var refusal failure.Body
	if _ = json.Unmarshal(body, &refusal); resp.StatusCode != http.StatusServiceUnavailable || refusal.Error.Code != failure.Unavailable {
		t.Errorf("a new call while draining = %d %s, want 503 unavailable", resp.StatusCode, body)
	}
	// Held as long as the call waits: the process does not end under it.
	time.Sleep(500 * time.Millisecond)
	select {
	case code := <-exit:
		t.Fatalf("serve exited (%d) with a call in flight", code)
	case got := <-call:
		t.Fatalf("the call ended (%v %s) while the lock was held", got.err, resultText(got.res))
	default:
	}

	released := time.Now()
	release()
	if err := <-unlocked; err != nil {
		t.Fatal(err)
	}
	got := <-call
	draft := draftOf(t, got.res, got.err)
	var n int
	if err := db.QueryRow(t.Context(), `SELECT count(*) FROM reminder_draft WHERE id = $1`, draft).Scan(&n); err != nil || n != 1 {
		t.Errorf("the answered draft %s is in the store %d times (%v), want once", draft, n, err)
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("serve exited %d after SIGTERM, want 0", code)
		}
	case <-time.After(shutdownTimeout):
		t.Fatalf("serve still running %v after the call ended", shutdownTimeout)
	}
	for _, line := range []string{"shutting down: not ready, refusing new requests, finishing those in flight", "requests drained"} {
		if _, ok := server.logs.logged(line); !ok {
			t.Errorf("serve did not log %q", line)
		}
	}
	t.Logf("SIGTERM → /readyz 503 in %v; the call released → exit in %v; SIGTERM → exit %v",
		unready.Round(time.Millisecond), time.Since(released).Round(time.Millisecond), time.Since(term).Round(time.Millisecond))
}

// TestServeSIGTERMDrainDelay: with COBRANCA_DRAIN_DELAY, `cobranca serve` (a process of its
// own) answers /readyz 503 at once on SIGTERM but goes on serving calls for the delay — what a
// load balancer polling readiness needs to take the replica out before it refuses anything —
// then drains as without it and exits 0, no sooner than the delay.
func TestServeSIGTERMDrainDelay(t *testing.T) {
	tier.EndToEnd(t)
	const delay = 5 * time.Second // the checks below take milliseconds; seconds spare on a loaded machine
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_DRAIN_DELAY=" + delay.String()}
	agent := strings.TrimSpace(mustRun(t, environ, "token", "--sub", "alice", "--agent", "collector-bot", "--scope", "collections:read"))
	server := startServeProcess(t, environ, addr)
	list := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+agent)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := list(); code != http.StatusOK {
		t.Fatalf("tools/list before SIGTERM = %d %s", code, body)
	}

	term := time.Now()
	server.terminate(t)
	exit := exited(server)
	for deadline := time.Now().Add(delay); ; time.Sleep(5 * time.Millisecond) {
		if code, _ := server.ready(); code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz did not answer 503 within the delay of SIGTERM")
		}
	}
	if code, body := list(); code != http.StatusOK || !strings.Contains(body, `"tools"`) {
		_, refusing := server.logs.logged("shutting down: not ready, refusing new requests, finishing those in flight")
		t.Errorf("tools/list while not ready, %v after SIGTERM = %d %.200s, want it served (the delay over already: %v)",
			time.Since(term).Round(time.Millisecond), code, body, refusing)
	}
	if _, ok := server.logs.logged("shutting down: not ready, still serving while load balancers stop sending"); !ok {
		t.Error("serve did not log that it still serves while not ready")
	}
	select {
	case code := <-exit:
		if code != 0 {
			t.Errorf("serve exited %d after SIGTERM, want 0", code)
		}
	case <-time.After(delay + shutdownTimeout):
		t.Fatalf("serve still running %v after SIGTERM", delay+shutdownTimeout)
	}
	if took := time.Since(term); took < delay {
		t.Errorf("serve exited %v after SIGTERM, before its drain delay of %v", took.Round(time.Millisecond), delay)
	}
	if _, ok := server.logs.logged("requests drained"); !ok {
		t.Error(`serve did not log "requests drained"`)
	}
}

// TestServeSIGTERMBulk: `cobranca serve` gets SIGTERM while it delivers a bulk send of 200
// reminders (4 mail workers, a relay that takes 50 ms a message). Its workers finish the
// messages they took — those being sent and those waiting for a sending worker,
// outbox.SlotsPerWorker × 4 at most — and take no other: at most that many more arrive after
// SIGTERM, each is recorded sent, no entry is left running, the bulk is not done, and the
// process exits 0. A
// new process on the same store delivers the rest: every draft sent, each message once.
func TestServeSIGTERMBulk(t *testing.T) {
	tier.EndToEnd(t)
	eachStoreAtOnce(t, testServeSIGTERMBulk)
}

func testServeSIGTERMBulk(t *testing.T, db []string) {
	const n, workers = 200, 4
	mail := smtptest.Start(t, smtptest.Options{Latency: 50 * time.Millisecond})
	addr := freeAddr(t)
	environ := append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_SMTP_URL=" + mail.URL(), "COBRANCA_MAIL_FROM=" + mailFrom, "COBRANCA_MAIL_WORKERS=4", "COBRANCA_LOG_LEVEL=info",
		"COBRANCA_RATE_STORE_TIMEOUT=5s", bulkWriteBudget}, db...)
	st := migratedStore(t, environ)
	reminderstest.Bulk(t, st, n)
	server := startServeProcess(t, environ, addr)
	sendBulk(t, environ, addr, n)

	mail.Wait(t, 20, 30*time.Second)
	before := len(mail.Messages())
	term := time.Now()
	server.terminate(t)
	if code := server.wait(); code != 0 {
		t.Fatalf("serve exited %d after SIGTERM, want 0", code)
	}
	stopped := time.Since(term)
	got := mail.Messages()
	states := map[string]int{}
	for _, e := range outboxtest.Entries(t, st) {
		states[e.State]++
	}
	var sent int
	if err := st.QueryRow(t.Context(), `SELECT count(*) FROM reminder_draft WHERE state = 'sent'`).Scan(&sent); err != nil {
		t.Fatal(err)
	}
	if after, taken := len(got)-before, outbox.SlotsPerWorker*workers; after > taken || len(got) >= n {
		t.Errorf("%d messages arrived after SIGTERM (%d in all), want at most the %d taken", after, len(got), taken)
	}
	if states["running"] != 0 || states["completed"] != len(got) || sent != len(got) {
		t.Errorf("after the exit: entries %v, %d drafts sent, %d messages received; want every message received recorded sent, none running", states, sent, len(got))
	}
	if _, ok := server.logs.logged("outbox stopped: the messages being sent finished"); !ok {
		t.Error("serve did not log the outbox's stop")
	}

	startServeProcess(t, environ, addr)
	reminderstest.WaitSent(t, st, n, 60*time.Second)
	time.Sleep(200 * time.Millisecond)
	ids := map[string]bool{}
	for _, m := range mail.Messages() {
		ids[m.MessageID] = true
	}
	if len(ids) != n || len(mail.Messages()) != n {
		t.Errorf("received %d messages under %d Message-IDs, want %d, each once", len(mail.Messages()), len(ids), n)
	}
	t.Logf("SIGTERM with %d of %d sent: %d more finished, exit 0 after %v; the next process sent the other %d",
		before, n, len(got)-before, stopped.Round(time.Millisecond), n-len(got))
}

// migratedStore migrates the store environ names (`cobranca migrate`) and opens it for the
// test, until it ends.
func migratedStore(t *testing.T, environ []string) store.DB {
	t.Helper()
	mustRun(t, environ, "migrate")
	db, err := openStore(t.Context(), mustConfig(t, environ), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
