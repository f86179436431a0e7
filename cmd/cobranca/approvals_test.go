package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"flag"
	"log/slog"
	"os"
	"path/filepath"
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
		out, err := cli(tt.token+"\n", "approvals", "approve", x.ID, "--token", "-")
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
	if out, err := cli(person, "approvals", "reject", x.ID, "--token", "-"); !isFailure(err, approval.CodeDecided) {
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

// TestTokenFlags: the commands that act as a person take the person's access token from
// standard input (--token -) or a file (--token-file), never from the command line, where
// every user of the machine sees it (ps) and the shell keeps it: a token written there is a
// usage error that says why and what to do instead, before anything is read or opened.
func TestTokenFlags(t *testing.T) {
	const token = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJicnVubyJ9.c2ln"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"approvals approve", "approvals reject", "write-off"} {
		parse := func(stdin string, flags ...string) (string, string, error) {
			var out, errOut bytes.Buffer
			e := env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}
			fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), cmd: command{name: name}, e: e}
			fs.SetOutput(&errOut)
			tf := addTokenFlags(fs, "the person's")
			if err := fs.parse(flags); err != nil {
				return "", errOut.String(), err
			}
			got, err := tokenArg(e, fs, tf, "the person's")
			return got, errOut.String(), err
		}
		t.Run(name, func(t *testing.T) {
			for _, c := range []struct {
				name, stdin string
				flags       []string
				ok          bool
				says        string // in the usage error
			}{
				{"stdin", token + "\n", []string{"--token", "-"}, true, ""},
				{"stdin without a newline", token, []string{"--token", "-"}, true, ""},
				{"a file", "", []string{"--token-file", file}, true, ""},
				{"on the command line", "", []string{"--token", token}, false, "--token: takes only -"},
				{"on the command line as --token=", "", []string{"--token=" + token}, false, "seen by every user of the machine"},
				{"both", token, []string{"--token", "-", "--token-file", file}, false, "give one"},
				{"none", "", nil, false, "want the person's access token"},
				{"empty stdin", "\n", []string{"--token", "-"}, false, "want the person's access token"},
			} {
				got, stderr, err := parse(c.stdin, c.flags...)
				switch {
				case c.ok && (err != nil || got != token):
					t.Errorf("%s: tokenArg = %q, %v; want the token", c.name, got, err)
				case !c.ok && (err != exitUsage || !strings.Contains(stderr, c.says)):
					t.Errorf("%s: tokenArg = %v, stderr %q; want a usage error saying %q", c.name, err, stderr, c.says)
				case !c.ok && strings.Contains(stderr, token):
					t.Errorf("%s: the usage error repeats the token: %q", c.name, stderr)
				}
			}
		})
	}
	// The real commands refuse it before anything else.
	for _, args := range [][]string{{"approvals", "approve", "a_x", "--token", token}, {"write-off", "--token", token, "--invoice", "NF-1"}} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), args, []string{"COBRANCA_DATA_DIR=" + t.TempDir()}, strings.NewReader(""), &out, &errOut)
		if err != exitUsage || !strings.Contains(errOut.String(), "--token: takes only -") {
			t.Errorf("cobranca %s --token TOKEN = %v, %q; want the usage error", args[0], err, errOut.String())
		}
	}
}
