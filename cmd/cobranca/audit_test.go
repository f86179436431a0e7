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
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// TestMigrateAndAudit drives the CLI on a fresh SQLite data directory: migrate, migrate
// status, audit verify, audit checkpoint, and verify --checkpoint before and after the chain
// grows; a checkpoint signed by another key is refused.
func TestMigrateAndAudit(t *testing.T) {
	dir := t.TempDir()
	environ := []string{"COBRANCA_DATA_DIR=" + dir}
	cli := func(args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, environ, nil, &out, &errOut)
		return out.String() + errOut.String(), err
	}

	if out, err := cli("audit", "verify"); err == nil || !strings.Contains(err.Error(), "migrate") {
		t.Errorf("audit verify before migrate = %q, %v; want an error saying to migrate", out, err)
	}
	if out, err := cli("migrate"); err != nil || !strings.Contains(out, "applied 00001") {
		t.Fatalf("migrate = %q, %v", out, err)
	}
	if out, err := cli("migrate"); err != nil || !strings.Contains(out, "nothing to apply") {
		t.Errorf("second migrate = %q, %v", out, err)
	}
	if out, err := cli("migrate", "status"); err != nil || !regexp.MustCompile(`00001\s+00001_audit_log.sql\s+\d{4}-`).MatchString(out) {
		t.Errorf("migrate status = %q, %v", out, err)
	}
	// No audit key yet (serve or the first event makes it): the chain is verified, the
	// MACs cannot be, and verify says so and fails rather than pass silently.
	out, err := cli("audit", "verify")
	if err == nil || !strings.Contains(err.Error(), "MACs cannot be checked without the audit key") ||
		strings.TrimSpace(out) != "OK 0 events, head 0 "+strings.Repeat("0", 64)+"; MACs NOT checked: no audit key" {
		t.Errorf("audit verify without an audit key = %q, %v; want the chain verified and an error about the key", out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "audit-digest.key")); err == nil {
		t.Error("audit verify created an audit key")
	}

	record := func(n int) {
		t.Helper()
		cfg, err := config.Load(environ)
		if err != nil {
			t.Fatal(err)
		}
		db, err := openStore(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		key, err := auditKey(cfg, true)
		if err != nil {
			t.Fatal(err)
		}
		l, err := auditlog.New(db, key, auditlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := l.Record(context.Background(), auditlog.Event{Name: "collections.test.ran", Outcome: auditlog.Allowed}); err != nil {
				t.Fatal(err)
			}
		}
	}
	record(3)
	cp := filepath.Join(dir, "head.json")
	if out, err := cli("audit", "checkpoint", "--out", cp); err != nil {
		t.Fatalf("audit checkpoint = %q, %v", out, err)
	}
	record(2)
	out, err = cli("audit", "verify", "--checkpoint", cp)
	if err != nil || !regexp.MustCompile(`^OK 5 events, head 5 [0-9a-f]{64}\n$`).MatchString(out) {
		t.Errorf("audit verify --checkpoint = %q, %v; want OK 5 events", out, err)
	}

	// An auditor off the box holds only the public key.
	pubPEM, err := cli("audit", "pubkey")
	if err != nil || !strings.HasPrefix(pubPEM, "-----BEGIN PUBLIC KEY-----") {
		t.Fatalf("audit pubkey = %q, %v", pubPEM, err)
	}
	pubFile := filepath.Join(t.TempDir(), "audit.pub")
	if err := os.WriteFile(pubFile, []byte(pubPEM), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("audit", "verify", "--checkpoint", cp, "--pubkey", pubFile); err != nil || !strings.HasPrefix(out, "OK 5 events") {
		t.Errorf("audit verify --pubkey = %q, %v; want OK 5 events", out, err)
	}
	// Verifying never creates the key it would trust.
	missing := filepath.Join(t.TempDir(), "nokey.pem")
	envMissing := append(environ[:len(environ):len(environ)], "COBRANCA_AUDIT_SIGNING_KEY="+missing)
	var mbuf bytes.Buffer
	if err := run(context.Background(), []string{"audit", "verify", "--checkpoint", cp}, envMissing, nil, &mbuf, &mbuf); err == nil {
		t.Errorf("audit verify with no key file succeeded: %s", mbuf.String())
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("audit verify created a signing key at %s", missing)
	}

	other := filepath.Join(t.TempDir(), "other.pem")
	environOther := append(environ[:len(environ):len(environ)], "COBRANCA_AUDIT_SIGNING_KEY="+other)
	var buf bytes.Buffer
	if err := run(context.Background(), []string{"audit", "checkpoint"}, environOther, nil, &buf, &buf); err != nil {
		t.Fatal(err)
	}
	forged := filepath.Join(dir, "forged.json")
	if err := os.WriteFile(forged, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := cli("audit", "verify", "--checkpoint", forged); err == nil || !strings.Contains(err.Error(), "signature") {
		t.Errorf("audit verify with a checkpoint of another key = %q, %v; want a signature error", out, err)
	}
	if _, err := cli("audit", "bogus"); !errors.Is(err, exitUsage) {
		t.Errorf("audit bogus = %v, want a usage error (exit 2)", err)
	}

	// A row inserted with database access alone is reported at its sequence number.
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, sqlite.FileName), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.Exec(context.Background(), `INSERT INTO audit_event (event, outcome, occurred_at, server_time, nonce, mac)
VALUES ('collections.portfolio.analyzed', 'allowed', 1, 1, randomblob(16), randomblob(32))`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	out, err = cli("audit", "verify")
	var ee exitError
	if !errors.As(err, &ee) || int(ee) != 1 || !strings.HasPrefix(out, "FAIL seq 6: forged: MAC mismatch: not written by this server") {
		t.Errorf("audit verify after a forged INSERT = %q, %v; want FAIL seq 6: forged, exit 1", out, err)
	}
}

// TestAuditKeyRotation drives audit rotate-key and audit verify through a rotation of
// COBRANCA_AUDIT_KEY on SQLite: the old key's events verify under it, the new key's under the
// new one, a missing key is named, and an event under the retired key is reported.
func TestAuditKeyRotation(t *testing.T) {
	dir := t.TempDir()
	oldKey, newKey := strings.Repeat("o", 32), strings.Repeat("n", 32)
	base := []string{"COBRANCA_DATA_DIR=" + dir}
	oldEnv := append(base[:1:1], "COBRANCA_AUDIT_KEY="+oldKey)
	rotated := append(base[:1:1], "COBRANCA_AUDIT_KEY="+newKey+","+oldKey)
	newOnly := append(base[:1:1], "COBRANCA_AUDIT_KEY="+newKey)
	cli := func(environ []string, args ...string) (string, error) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(context.Background(), args, environ, nil, &out, &errOut)
		return out.String() + errOut.String(), err
	}
	record := func(key string, n int) {
		t.Helper()
		cfg, err := config.Load(oldEnv)
		if err != nil {
			t.Fatal(err)
		}
		db, err := openStore(context.Background(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		l, err := auditlog.New(db, []byte(key), auditlog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := l.Record(context.Background(), auditlog.Event{Name: "collections.test.ran", Outcome: auditlog.Allowed}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if out, err := cli(oldEnv, "migrate"); err != nil {
		t.Fatalf("migrate = %q, %v", out, err)
	}
	record(oldKey, 2)
	oldID, newID := auditlog.KeyID([]byte(oldKey)), auditlog.KeyID([]byte(newKey))

	if out, err := cli(oldEnv, "audit", "rotate-key"); err == nil || !strings.Contains(err.Error(), "holds one key") {
		t.Errorf("rotate-key with one key = %q, %v; want a refusal saying how to rotate", out, err)
	}
	// The old key sealed an event just now: a replica may still run with it.
	if out, err := cli(rotated, "audit", "rotate-key"); err == nil || !strings.Contains(err.Error(), "key "+oldID+" sealed an event at") {
		t.Errorf("rotate-key right after the old key's use = %q, %v; want a refusal naming %s", out, err, oldID)
	}
	record(newKey, 1)
	if out, err := cli(rotated, "audit", "verify"); err != nil || !strings.HasPrefix(out, "OK 3 events") || !strings.Contains(out, "events per key: "+min(oldID, newID)) {
		t.Errorf("audit verify under both keys = %q, %v; want OK 3 events, per key", out, err)
	}
	out, err := cli(newOnly, "audit", "verify")
	if want := "FAIL seq 1: key_missing: sealed under key " + oldID; err == nil || !strings.HasPrefix(out, want) {
		t.Errorf("audit verify without the old key = %q, %v; want %q", out, err, want)
	}
	if out, err := cli(rotated, "audit", "rotate-key", "--force"); err != nil || out != "key "+oldID+": retired (2 events under it); new events are sealed under key "+newID+"\n" {
		t.Errorf("rotate-key --force = %q, %v", out, err)
	}
	if out, err := cli(rotated, "audit", "rotate-key"); err != nil || out != "key "+oldID+": already retired\n" {
		t.Errorf("rotate-key again = %q, %v", out, err)
	}
	record(newKey, 1)
	if out, err := cli(rotated, "audit", "verify"); err != nil || !strings.HasPrefix(out, "OK 5 events") {
		t.Errorf("audit verify after the retirement = %q, %v; want OK 5 events", out, err)
	}
	// Someone holding the leaked old key writes an event.
	record(oldKey, 1)
	out, err = cli(rotated, "audit", "verify")
	if want := "FAIL seq 6: retired_key: sealed under key " + oldID + ", retired at seq 4"; err == nil || !strings.HasPrefix(out, want) {
		t.Errorf("audit verify with an event under the retired key = %q, %v; want %q", out, err, want)
	}
}
