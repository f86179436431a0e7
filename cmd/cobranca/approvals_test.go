package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/failure"
)

// TestApprovalsCommands drives `approvals list|show|approve|reject` on a
// fresh data directory, on SQLite and on PostgreSQL, with tokens of
// `cobranca token`: an agent's token and a forged one are refused with
// their codes and change nothing; a person's approves, which list and show
// then say; deciding again is refused; every decision and refusal of a
// verified token is audited, in a chain that verifies.
func TestApprovalsCommands(t *testing.T) {
	eachStore(t, func(t *testing.T, db []string) {
		testApprovalsCommands(t, append([]string{"COBRANCA_DATA_DIR=" + t.TempDir()}, db...))
	})
}

func testApprovalsCommands(t *testing.T, environ []string) {
	ctx := context.Background()
	cli := func(stdin string, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(ctx, args, environ, strings.NewReader(stdin), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := cli("", "migrate"); err != nil {
		t.Fatalf("migrate = %q, %v", out, err)
	}
	// A pending action, as the pipeline records it, for a served critical tool.
	name := collections.SendReminderName
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	db, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := approval.New(cfg.ApprovalTTL, nil)
	if err != nil {
		t.Fatal(err)
	}
	x, err := s.Create(ctx, db, name, sha256.Sum256([]byte("call")), "set the note of C-42 to paid", []string{"changes a note"},
		approval.Requester{Subject: "ana", Client: "collector-bot", Actor: "collector-bot"})
	if err != nil {
		t.Fatal(err)
	}
	token := func(args ...string) string {
		t.Helper()
		out, err := cli("", append([]string{"token"}, args...)...)
		if err != nil {
			t.Fatalf("token = %q, %v", out, err)
		}
		return strings.TrimSpace(out)
	}
	agent, person := token("--sub", "bruno", "--agent", "other-bot", "--role", collections.ApproverRole), token("--sub", "bruno", "--acr", "urn:mfa", "--role", collections.ApproverRole)
	noRole := token("--sub", "dora", "--acr", "urn:mfa", "--role", "collections.viewer")

	for _, tt := range []struct {
		name, token string
		code        failure.Code
	}{
		{"an agent's token", agent, approval.CodeApproverIsAgent},
		{"a forged token", person + "x", approval.CodeInvalidToken},
		{"a person's without the approver role", noRole, approval.CodeApproverLacksRole},
	} {
		out, err := cli("", "approvals", "approve", x.ID, "--token", tt.token)
		if fe, ok := failure.As(err); !ok || fe.Code != tt.code {
			t.Errorf("approve with %s = %q, %v; want %s", tt.name, out, err, tt.code)
		}
	}
	if out, err := cli("", "approvals", "approve", x.ID); err != exitUsage || !strings.Contains(out, "--token") {
		t.Errorf("approve without a token = %q, %v; want a usage error naming --token", out, err)
	}
	if out, err := cli("", "approvals", "list"); err != nil || !regexp.MustCompile(x.ID+` +pending +`+regexp.QuoteMeta(name)+` +ana +collector-bot `).MatchString(out) {
		t.Errorf("list before a decision = %q, %v; want %s pending", out, err, x.ID)
	}
	out, err := cli(person+"\n", "approvals", "approve", x.ID, "--token", "-")
	if err != nil || !strings.HasPrefix(out, "approved "+x.ID+" ("+name+") by bruno at ") {
		t.Fatalf("approve = %q, %v", out, err)
	}
	if out, err := cli("", "approvals", "reject", x.ID, "--token", person); !isFailure(err, approval.CodeDecided) {
		t.Errorf("reject after approve = %q, %v; want %s", out, err, approval.CodeDecided)
	}
	out, err = cli("", "approvals", "show", x.ID)
	for _, want := range []string{`state +approved\n`, `preview +set the note of C-42 to paid\n`, `side effect +changes a note\n`, `decided by +bruno\n`, `acr +urn:mfa\n`} {
		if err != nil || !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("show = %q, %v; want %s in it", out, err, want)
		}
	}
	var approved, refused int64
	if err := db.QueryRow(ctx, `SELECT COUNT(*) FILTER (WHERE outcome = 'allowed'), COUNT(*) FILTER (WHERE outcome = 'rejected') FROM audit_event WHERE event LIKE 'approval.%' AND tool = $1`,
		approval.Object(x)).Scan(&approved, &refused); err != nil {
		t.Fatal(err)
	}
	if approved != 1 || refused != 3 { // the agent, the one without the role, the decided; the forged token names nobody
		t.Errorf("audited %d approvals and %d refusals, want 1 and 3", approved, refused)
	}
	if out, err := cli("", "audit", "verify"); err != nil || !strings.HasPrefix(out, "OK ") {
		t.Errorf("audit verify = %q, %v", out, err)
	}
}

func isFailure(err error, code failure.Code) bool {
	fe, ok := failure.As(err)
	return ok && fe.Code == code
}
