package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseRun(t *testing.T) {
	tok := writeFile(t, "agent.tok", "agent-token\n")
	person := writeFile(t, "approver.tok", "person-token\n")
	base := []string{"-urls", "http://a/mcp, http://b/mcp,http://c/mcp", "-token-file", tok}
	outbox := []string{"-drafts", "d.txt", "-cobranca", "/bin/cobranca", "-sink", "http://s", "-approver-token-file", person}
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string // "" for none
		check   func(*testing.T, runOptions)
	}{
		{name: "medium", args: append(base, "-medium", "8", "-d", "5s"), check: func(t *testing.T, o runOptions) {
			if len(o.urls) != 3 || o.urls[1] != "http://b/mcp" || o.token != "agent-token" || o.medium != 8 || o.d != 5*time.Second {
				t.Errorf("parseRun = %+v, want 3 urls, the agent's token, 8 callers for 5s", o)
			}
		}},
		{name: "outbox: the backlog defaults to two rounds of bulk sends", args: append(append([]string{}, base...), append(outbox, "-bulk", "100", "-bulk-c", "3")...),
			check: func(t *testing.T, o runOptions) {
				if o.backlog != 600 || o.approver != "person-token" || o.medium != 0 {
					t.Errorf("parseRun = backlog %d, approver %q, medium %d; want 600, person-token, 0", o.backlog, o.approver, o.medium)
				}
			}},
		{name: "nothing to drive", args: base, wantErr: "nothing to drive"},
		{name: "outbox without its approver", args: append(append([]string{}, base...), "-drafts", "d.txt"), wantErr: "-drafts needs"},
		{name: "no urls", args: []string{"-token-file", tok, "-medium", "1"}, wantErr: "-urls"},
		{name: "an empty token file", args: []string{"-urls", "http://a/mcp", "-token-file", writeFile(t, "empty", "\n"), "-medium", "1"}, wantErr: "empty"},
		{name: "a bulk too large", args: append(append([]string{}, base...), append(outbox, "-bulk", "10001")...), wantErr: "-bulk"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseRun(tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseRun(%q) = %v, want an error with %q", tc.args, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseRun(%q) = %v", tc.args, err)
			}
			tc.check(t, o)
		})
	}
}

// TestSink sends messages to the sink over SMTP, as a replica's outbox does, and reads their
// count back from its HTTP address.
func TestSink(t *testing.T) {
	sl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- (&sink{}).serve(ctx, sl, hl) }()
	base := "http://" + hl.Addr().String()
	hc := &http.Client{Timeout: 5 * time.Second}
	if n, err := sinkCount(t.Context(), hc, base); err != nil || n != 0 {
		t.Fatalf("sinkCount before any message = %d, %v; want 0", n, err)
	}
	c, err := smtp.Dial(sl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		msg := fmt.Sprintf("Subject: %d\r\n\r\nbody %d\r\n", i, i)
		if err := c.SendMail("cobranca@scale.example", []string{fmt.Sprintf("c-%d@scale.example", i)}, strings.NewReader(msg)); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
	if err := c.Quit(); err != nil {
		t.Fatal(err)
	}
	if n, err := sinkCount(t.Context(), hc, base); err != nil || n != 3 {
		t.Errorf("sinkCount after 3 messages = %d, %v; want 3", n, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after its context ended = %v, want nil", err)
	}
}

func TestReadDrafts(t *testing.T) {
	got, err := readDrafts(writeFile(t, "drafts", "d_1\n\n  d_2 \nd_3\n"))
	if err != nil || strings.Join(got, ",") != "d_1,d_2,d_3" {
		t.Errorf("readDrafts = %q, %v; want d_1 d_2 d_3", got, err)
	}
	if _, err := readDrafts(writeFile(t, "none", "\n")); err == nil {
		t.Error("readDrafts of a file without ids = nil error, want one")
	}
}

// TestPrepareArgsAreFresh: every medium call writes a new customer and draft — a repeat of an
// earlier customer's draft would answer it back without writing (created false).
func TestPrepareArgsAreFresh(t *testing.T) {
	a, b := prepareArgs("r-0-1"), prepareArgs("r-0-2")
	ca, cb := a["customer"].(map[string]any), b["customer"].(map[string]any)
	if ca["id"] == cb["id"] || ca["email"] == cb["email"] || a["idempotencyKey"] == b["idempotencyKey"] {
		t.Errorf("prepareArgs share a customer, address or key: %v and %v", a, b)
	}
}

func TestScaleScriptParses(t *testing.T) {
	if out, err := exec.Command("bash", "-n", "../scale.sh").CombinedOutput(); err != nil {
		t.Fatalf("bash -n scripts/scale.sh: %v\n%s", err, out)
	}
}
