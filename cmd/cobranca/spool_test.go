package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/keyfile"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/tier"
)

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeKeepsEventsWhileDatabaseDown runs `cobranca serve` on PostgreSQL, stops the
// database mid-test and starts it again: the analyze_portfolio calls made while it is down are
// answered, their events wait in the data directory's spool, and once the database is back
// they are in the chain, in the order of the calls, and `audit verify` says OK. End-to-end: it
// stops a PostgreSQL server; auditlog's TestSpoolWhileStoreDown checks the spool's rules.
func TestServeKeepsEventsWhileDatabaseDown(t *testing.T) {
	tier.EndToEnd(t)
	own := pgtest.Private() // stopped below: not shared with other tests
	t.Cleanup(own.Close)
	dbURL := own.Database(t)
	addr, metricsAddr := freeAddr(t), freeAddr(t)
	dir := t.TempDir()
	environ := []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=" + addr, "COBRANCA_DATABASE_URL=" + dbURL,
		"COBRANCA_METRICS_ADDR=" + metricsAddr}
	// spooled is the cobranca_audit_spool_events gauge: what an operator sees of the wait.
	spooled := func() string {
		t.Helper()
		_, body := get(t, "http://"+metricsAddr+"/metrics")
		m := regexp.MustCompile(`(?m)^cobranca_audit_spool_events (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics lacks cobranca_audit_spool_events:\n%s", body)
		}
		return m[1]
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serveLog, err := os.Create(filepath.Join(t.TempDir(), "serve.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer serveLog.Close()
	logged := func() string { b, _ := os.ReadFile(serveLog.Name()); return string(b) }
	served := make(chan error, 1)
	go func() { served <- run(ctx, []string{"serve"}, environ, nil, serveLog, serveLog) }()
	waitHealthy(t, "http://"+addr+"/healthz", served)

	var tok bytes.Buffer
	if err := run(ctx, []string{"token", "--sub", "alice", "--scope", "collections:read", "--agent", "ledger-copilot"}, environ, nil, &tok, &tok); err != nil {
		t.Fatalf("token: %v: %s", err, tok.String())
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearer(strings.TrimSpace(tok.String()))}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	call := func(when string) {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "collections.analyze_portfolio", Arguments: map[string]any{
			"asOf":     "2026-11-29",
			"invoices": []any{map[string]any{"id": "inv-1", "customerId": "c-1", "customerName": "Ana Ltda", "dueDate": "2026-11-01", "amountCents": 150000, "status": "open", "doNotContact": false}},
		}})
		if err != nil || res.IsError {
			t.Fatalf("call %s = %v, %v; want it answered", when, res, err)
		}
	}

	call("with the database up")
	// A token whose identity the store could not keep (a NUL, an over-long agent id) is
	// refused at the edge: no call, no event, and the spool stays empty. `cobranca token`
	// refuses to mint one, so the test signs it with the development key itself.
	for _, edit := range []func(jwt.MapClaims){
		func(c jwt.MapClaims) { c["sub"] = "alice\x00mallory" },
		func(c jwt.MapClaims) { c["act"] = map[string]any{"sub": strings.Repeat("a", 2000)} },
	} {
		bad := resign(t, dir, strings.TrimSpace(tok.String()), edit)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+bad)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(ch, "token has an invalid") {
			t.Errorf("POST /mcp with an identity the store cannot keep = %d %q, want 401 naming the claim", resp.StatusCode, ch)
		}
	}
	call("with the database up")
	if n := spooled(); n != "0" {
		t.Errorf("cobranca_audit_spool_events = %s with the database up, want 0", n)
	}
	stopAt := time.Now()
	own.Stop(t)
	for range 3 {
		call("with the database down")
	}
	if n := spooled(); n != "3" {
		t.Errorf("cobranca_audit_spool_events = %s after 3 calls with the database down, want 3", n)
	}
	spool := filepath.Join(dir, auditlog.SpoolFileName)
	if st, err := os.Stat(spool); err != nil || st.Size() == 0 || st.Mode().Perm() != 0o600 {
		t.Fatalf("spool after 3 calls with the database down: %v, %v; want a non-empty 0600 file", st, err)
	}
	startAt := time.Now()
	own.Start(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := os.Stat(spool)
		if err == nil && st.Size() == 0 && spooled() == "0" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spool is not empty (file %v, %v; cobranca_audit_spool_events %s) 30 s after the database came back; log:\n%s", st, err, spooled(), logged())
		}
		time.Sleep(50 * time.Millisecond)
	}
	call("with the database back")
	sess.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("serve: %v\n%s", err, logged())
	}
	if strings.Contains(logged(), "Ana Ltda") {
		t.Error("the server log holds a customer name")
	}

	var out bytes.Buffer
	if err := run(context.Background(), []string{"audit", "verify"}, environ, nil, &out, &out); err != nil ||
		!regexp.MustCompile(`^OK 6 events, head 6 [0-9a-f]{64}\n$`).MatchString(out.String()) {
		t.Fatalf("audit verify = %q, %v; want OK 6 events", out.String(), err)
	}
	l, closeDB, err := openAuditLog(context.Background(), mustConfig(t, environ), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	evs, err := l.Events(context.Background(), 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Name != "collections.portfolio.analyzed" || ev.Outcome != auditlog.Allowed || ev.Subject != "alice" {
			t.Errorf("event %d = %+v, want an allowed analyze by alice", i+1, ev)
		}
		if i > 0 && ev.ServerTime.Before(evs[i-1].ServerTime) {
			t.Errorf("event %d was made at %v, before event %d (%v): not in the order of the calls", i+1, ev.ServerTime, i, evs[i-1].ServerTime)
		}
	}
	// The three events made while the database was down were written once it
	// was back: by cause, not by how long a restart takes on a loaded machine.
	down := 0
	for i, ev := range evs {
		if ev.ServerTime.After(stopAt) && ev.ServerTime.Before(startAt) {
			down++
			if ev.Time.Before(startAt) {
				t.Errorf("event %d, made while the database was down, is stamped written at %v, before it came back (%v)", i+1, ev.Time, startAt)
			}
		}
	}
	if down != 3 {
		t.Errorf("%d events made while the database was down, want the 3 spooled ones", down)
	}
}

// resign returns the development token tok with its claims edited, signed
// again with the development key kept in dir, under the same header.
func resign(t *testing.T, dir, tok string, edit func(jwt.MapClaims)) string {
	t.Helper()
	key, err := keyfile.LoadOrCreateEd25519(filepath.Join(dir, "dev-signing-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	c := jwt.MapClaims{}
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, c)
	if err != nil {
		t.Fatal(err)
	}
	edit(c)
	re := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	re.Header = parsed.Header
	s, err := re.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func waitHealthy(t *testing.T, url string, served <-chan error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-served:
			t.Fatalf("serve stopped: %v", err)
		default:
		}
		if res, err := http.Get(url); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal(fmt.Errorf("%s not healthy after 30 s", url))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func mustConfig(t testing.TB, environ []string) config.Config {
	t.Helper()
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestServeRefusesSymlinkedSpool: a symbolic link at the spool's path stops serve with an
// error naming it, and what it points to is left as it was (neither emptied nor made 0600).
func TestServeRefusesSymlinkedSpool(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(target, []byte("someone's notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spool := filepath.Join(dir, auditlog.SpoolFileName)
	if err := os.Symlink(target, spool); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err := run(t.Context(), []string{"serve"}, []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=127.0.0.1:0"}, nil, &out, &out)
	if err == nil || !strings.Contains(err.Error(), spool) || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("serve with a symlinked spool = %v, want an error naming %s as a symbolic link\n%s", err, spool, out.String())
	}
	b, _ := os.ReadFile(target)
	st, _ := os.Stat(target)
	if string(b) != "someone's notes\n" || st.Mode().Perm() != 0o644 {
		t.Errorf("the link's target is now %q, mode %v; want it untouched", b, st.Mode().Perm())
	}
}
