package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/config"
)

// TestAuditExportVerifyFile drives audit export and audit verify --file on a SQLite data
// directory: the export verifies offline, with a checkpoint too; a file changed after it
// fails, naming the line; bad flags are usage errors naming the flag.
func TestAuditExportVerifyFile(t *testing.T) {
	dir := t.TempDir()
	environ := []string{"COBRANCA_DATA_DIR=" + dir}
	cli := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, environ, nil, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	if out, err := cli("migrate"); err != nil {
		t.Fatalf("migrate = %q, %v", out, err)
	}
	cfg, err := config.Load(environ)
	if err != nil {
		t.Fatal(err)
	}
	db, err := openStore(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	key, err := auditKey(cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	l, err := auditlog.New(db, key, auditlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"collections.send_reminder", "collections.analyze_portfolio", "collections.send_reminder", "collections.list_invoices"} {
		if err := l.Record(context.Background(), auditlog.Event{Name: "collections.test.ran", Tool: tool, Subject: "ana", Outcome: auditlog.Allowed, Details: map[string]int64{"invoiceCount": 3}}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	cp := filepath.Join(dir, "head.json")
	if out, err := cli("audit", "checkpoint", "--out", cp); err != nil {
		t.Fatalf("audit checkpoint = %q, %v", out, err)
	}

	file := filepath.Join(dir, "trail.jsonl")
	if out, err := cli("audit", "export", "--out", file); err != nil || out != "exported 4 events (seq 1 to 4)\n" {
		t.Fatalf("audit export = %q, %v", out, err)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the export's file: %v, %v; want mode 0600", info, err)
	}
	out, err := cli("audit", "verify", "--file", file, "--checkpoint", cp)
	if err != nil || !regexp.MustCompile(`^OK 4 events, seq 1 to 4, head 4 [0-9a-f]{64}; checkpoints: 1 matched, 0 outside the export\n$`).MatchString(out) {
		t.Errorf("audit verify --file = %q, %v", out, err)
	}
	// To stdout, a filter's.
	out, err = cli("audit", "export", "--tool", "collections.send_reminder", "--since", "2000-01-01")
	if err != nil || strings.Count(out, `"type":"event"`) != 2 || !strings.HasSuffix(out, "exported 2 events (seq 1 to 3)\n") {
		t.Errorf("audit export --tool = %q, %v; want the 2 events of the tool", out, err)
	}

	// Offline: the database gone, the key in the data directory still verifies it.
	if err := os.Remove(filepath.Join(dir, "cobranca.db")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if out, err := cli("audit", "verify", "--file", file); err != nil || !strings.HasPrefix(out, "OK 4 events") {
		t.Errorf("audit verify --file without the database = %q, %v", out, err)
	}

	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(dir, "changed.jsonl")
	lines := strings.SplitAfter(string(b), "\n")
	lines[3] = strings.Replace(lines[3], `"subject":"ana"`, `"subject":"bia"`, 1)
	if err := os.WriteFile(changed, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = cli("audit", "verify", "--file", changed)
	if !errors.Is(err, exitError(1)) || !strings.HasPrefix(out, "FAIL line 4 (seq 3): altered: ") {
		t.Errorf("audit verify --file of a changed export = %q, %v; want FAIL line 4 (seq 3): altered, exit 1", out, err)
	}

	for _, args := range [][]string{
		{"audit", "export", "--since", "yesterday"},
		{"audit", "export", "--outcome", "won"},
		{"audit", "export", "--since", "2026-12-02", "--until", "2026-12-01"},
	} {
		out, err := cli(args...)
		if !errors.Is(err, exitUsage) || !strings.Contains(out, strings.TrimPrefix(args[2], "--")) {
			t.Errorf("%s = %q, %v; want a usage error naming %s", strings.Join(args, " "), out, err, args[2])
		}
	}
	if out, err := cli("audit", "verify", "--file", filepath.Join(dir, "none.jsonl")); err == nil || errors.Is(err, exitError(1)) {
		t.Errorf("audit verify --file of no file = %q, %v; want an error", out, err)
	}
}
