package main

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// TestWriteOffCommand drives `cobranca write-off` on a fresh data directory, on SQLite and on
// PostgreSQL, with tokens of `cobranca token` and COBRANCA_STEPUP_ACR set: a stepped-up person
// holding the role and the scope writes an invoice off, printed and stored as theirs; the
// printed key answers the same write-off again; the invoice again under a new key is refused
// with invoice_already_written_off; an agent's token, a password sign-in, a token without the
// role or the scope, a forged token and an unknown customer are refused with their codes and
// store nothing; every refusal of a verified token and the write-off are audited
// invoice.written_off, in a chain that verifies; the calls spend the tier's budget; `cobranca
// contracts` does not list the tool.
func TestWriteOffCommand(t *testing.T) {
	eachStore(t, func(t *testing.T, db []string) {
		environ := append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_STEPUP_ACR=urn:mfa",
			"COBRANCA_RATE_CRITICAL=5/1h,burst=5"}, db...) // the forbidden tier spends the critical budget
		ctx := context.Background()
		cli := func(stdin string, args ...string) (string, error) {
			t.Helper()
			var out, errOut bytes.Buffer
			err := run(ctx, args, environ, strings.NewReader(stdin), &out, &errOut)
			return out.String() + errOut.String(), err
		}
		mustRun(t, environ, "migrate")
		if out, err := cli("id,name,email\nC-1,Padaria São João,financeiro@padaria.example\n", "customers", "import", "-"); err != nil {
			t.Fatalf("customers import = %q, %v", out, err)
		}
		token := func(args ...string) string {
			return strings.TrimSpace(mustRun(t, environ, append([]string{"token"}, args...)...))
		}
		grant := []string{"--scope", collections.WriteOffScope, "--role", collections.WriteOffRole}
		carla := token(append([]string{"--sub", "carla", "--acr", "urn:mfa"}, grant...)...)
		// The token goes on standard input (--token -), never on the command line.
		writeOff := func(tok string, more ...string) (string, error) {
			return cli(tok+"\n", append([]string{"write-off", "--token", "-", "--invoice", "NF-1001", "--customer", "C-1", "--amount", "123456",
				"--reason", "cliente em recuperação judicial"}, more...)...)
		}

		out, err := writeOff(carla)
		m := regexp.MustCompile(`^written off NF-1001 \(customer C-1, 123456 cents\) as (wo_[a-z2-7]{26}) by carla at \S+ \(key (cli-\S+)\)\n$`).FindStringSubmatch(out)
		if err != nil || m == nil {
			t.Fatalf("write-off = %q, %v", out, err)
		}
		cfg, err := config.Load(environ)
		if err != nil {
			t.Fatal(err)
		}
		store, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		w, err := writeoffs.ForInvoice(ctx, store, "NF-1001")
		if err != nil || w.ID != m[1] || w.By.Subject != "carla" || w.By.ACR != "urn:mfa" || w.AmountCents != 123456 {
			t.Errorf("stored %+v, %v; want %s by carla", w, err, m[1])
		}
		if again, err := writeOff(carla, "--key", m[2]); err != nil || again != out {
			t.Errorf("write-off with the printed key = %q, %v; want %q", again, err, out)
		}

		for _, tt := range []struct {
			name  string
			token string
			args  []string
			code  failure.Code
		}{
			{"the invoice again", carla, nil, writeoffs.CodeAlreadyWrittenOff},
			{"an agent's token", token(append([]string{"--sub", "carla", "--agent", "ledger-bot", "--acr", "urn:mfa"}, grant...)...), []string{"--invoice", "NF-2"}, failure.PersonRequired},
			{"a password sign-in", token(append([]string{"--sub", "carla", "--acr", "urn:pwd"}, grant...)...), []string{"--invoice", "NF-2"}, failure.InsufficientUserAuthentication},
			{"no role", token("--sub", "dora", "--acr", "urn:mfa", "--scope", collections.WriteOffScope, "--role", collections.ApproverRole), []string{"--invoice", "NF-2"}, failure.PersonLacksRole},
			{"no scope", token("--sub", "dora", "--acr", "urn:mfa", "--scope", "collections:read", "--role", collections.WriteOffRole), []string{"--invoice", "NF-2"}, failure.InsufficientScope},
			{"a forged token", carla + "x", []string{"--invoice", "NF-2"}, approval.CodeInvalidToken},
			{"an unknown customer", carla, []string{"--invoice", "NF-2", "--customer", "C-404"}, customers.CodeNotFound},
			{"no reason", carla, []string{"--invoice", "NF-2", "--reason", ""}, failure.InvalidArguments},
			// carla's fifth call was the one before: her budget of the tier is spent.
			{"a sixth call", carla, []string{"--invoice", "NF-3"}, failure.RateLimited},
		} {
			out, err := writeOff(tt.token, tt.args...)
			if fe, ok := failure.As(err); !ok || fe.Code != tt.code {
				t.Errorf("write-off with %s = %q, %v; want %s", tt.name, out, err, tt.code)
			}
		}
		if out, err := cli("", "write-off", "--invoice", "NF-2"); err != exitUsage || !strings.Contains(out, "--token") {
			t.Errorf("write-off without a token = %q, %v; want a usage error naming --token", out, err)
		}
		if out, err := cli(carla+"\n", "write-off", "--token", "-", "--amount", "12,50"); err != exitUsage {
			t.Errorf("write-off --amount 12,50 = %q, %v; want a usage error", out, err)
		}
		var n int64
		if err := store.QueryRow(ctx, `SELECT COUNT(*) FROM write_off`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%d write-offs stored (%v), want 1", n, err)
		}
		var allowed, replayed, refused int64
		if err := store.QueryRow(ctx, `SELECT COUNT(*) FILTER (WHERE outcome = 'allowed'), COUNT(*) FILTER (WHERE outcome = 'replayed'),
COUNT(*) FILTER (WHERE outcome IN ('denied', 'rejected', 'rate_limited')) FROM audit_event WHERE event = 'invoice.written_off'`).Scan(&allowed, &replayed, &refused); err != nil {
			t.Fatal(err)
		}
		if allowed != 1 || replayed != 1 || refused != 8 { // all but the forged token, which names nobody
			t.Errorf("audited %d allowed, %d replayed, %d refused; want 1, 1, 8", allowed, replayed, refused)
		}
		if out, err := cli("", "audit", "verify"); err != nil || !strings.HasPrefix(out, "OK ") {
			t.Errorf("audit verify = %q, %v", out, err)
		}
		if out, err := cli("", "contracts"); err != nil || strings.Contains(out, "write_off") || !strings.Contains(out, collections.AnalyzeName) {
			t.Errorf("contracts = %.200q, %v; want the listing without the write-off tool", out, err)
		}
	})
}
