package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
)

// timeFlag is a flag holding an instant: RFC 3339, or a date (YYYY-MM-DD), midnight UTC.
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(v string) error {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, v); err == nil {
			f.t = t
			return nil
		}
	}
	return fmt.Errorf("%q: want a date (2026-12-01) or an RFC 3339 time (2026-12-01T09:30:00-03:00)", v)
}

// auditExport writes the sealed audit events as JSON Lines that `audit verify --file` checks
// offline.
func auditExport(ctx context.Context, e env, fs *flagSet, args []string) error {
	var since, until timeFlag
	var f auditlog.TrailFilter
	fs.Var(&since, "since", "the first event written at or after this time (a date, or RFC 3339)")
	fs.Var(&until, "until", "the last event written before this time (a date, or RFC 3339)")
	fs.StringVar(&f.Tool, "tool", "", "only the events of this tool")
	fs.StringVar(&f.Risk, "risk", "", "only the events of this risk tier")
	outcome := fs.String("outcome", "", "only the events with this outcome (allowed, denied, failed…)")
	fs.StringVar(&f.Subject, "subject", "", "only the events on this person's behalf")
	fs.StringVar(&f.Actor, "actor", "", "only the events of this agent")
	fs.StringVar(&f.ClientID, "client", "", "only the events of this OAuth client")
	out := fs.String("out", "", "write the export to this file instead of stdout")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit export: unexpected argument %q", fs.Arg(0))
	}
	f.Since, f.Until, f.Outcome = since.t, until.t, auditlog.Outcome(*outcome)
	if err := f.Check(); err != nil {
		return fs.misuse("%v", err)
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	// The end line's MAC is under the server's audit key, never one minted here.
	key, err := auditKey(cfg.Config, false)
	if err != nil {
		return err
	}
	if key == nil {
		return errors.New("audit export: no audit key (COBRANCA_AUDIT_KEY, or audit-digest.key in COBRANCA_DATA_DIR): an export is authenticated under it")
	}
	l, closeDB, err := openAuditLog(ctx, cfg.Config, key)
	if err != nil {
		return err
	}
	defer closeDB()
	if _, err := l.Seal(ctx); err != nil {
		return err
	}
	w, file := e.stdout, (*os.File)(nil)
	if *out != "" {
		if file, err = os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return err
		}
		defer file.Close()
		w = file
	}
	sum, err := l.Export(ctx, w, f)
	if err != nil {
		return err
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stderr, "exported %d events (seq %d to %d)\n", sum.Events, sum.First, sum.Last)
	return nil
}

// auditVerifyFile checks an export offline, with the audit keys of the configuration or the
// data directory: no database is opened.
func auditVerifyFile(e env, path string, cfg settings, cps []auditlog.Checkpoint) error {
	key, err := auditKey(cfg.Config, false)
	if err != nil {
		return err
	}
	var old [][]byte
	if key != nil && cfg.AuditKey != "" {
		for _, k := range cfg.AuditOldKeys {
			old = append(old, []byte(k))
		}
	}
	r, err := os.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	rep, err := auditlog.VerifyFile(bufio.NewReader(r), key, old, cps...)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	fmt.Fprintln(e.stdout, rep)
	if rep.Problem != nil {
		return exitError(1)
	}
	if !rep.MACsChecked {
		return errors.New("audit verify: the events' MACs cannot be checked without the audit key (COBRANCA_AUDIT_KEY, or audit-digest.key in COBRANCA_DATA_DIR): only the hash chain was verified")
	}
	return nil
}
