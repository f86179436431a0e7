package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/store"
)

// auditPubkey prints the public half of the checkpoint signing key, for
// keeping off the box with the checkpoints.
func auditPubkey(_ context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit pubkey: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	pub, err := auditlog.LoadVerifyKey(auditSigningKeyPath(cfg.Config))
	if err != nil {
		return err
	}
	doc, err := auditlog.PublicKeyPEM(pub)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(doc)
	return err
}

// repeated is a flag's values, one per use (a repeatable flag).
type repeated []string

func (f *repeated) String() string     { return fmt.Sprint(*f) }
func (f *repeated) Set(v string) error { *f = append(*f, v); return nil }

func auditVerify(ctx context.Context, e env, fs *flagSet, args []string) error {
	var files repeated
	fs.Var(&files, "checkpoint", "a signed checkpoint the chain must still contain (repeatable)")
	pubkey := fs.String("pubkey", "", "PEM public key that signed the checkpoints (default: the signing key file, which must exist)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit verify: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	var cps []auditlog.Checkpoint
	if len(files) > 0 {
		keyFile := *pubkey
		if keyFile == "" {
			keyFile = auditSigningKeyPath(cfg.Config)
		}
		pub, err := auditlog.LoadVerifyKey(keyFile)
		if err != nil {
			return err
		}
		for _, f := range files {
			doc, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			cp, err := auditlog.ParseCheckpoint(doc, pub)
			if err != nil {
				return fmt.Errorf("%s: %w", f, err)
			}
			cps = append(cps, cp)
		}
	}
	// The MACs are checked under the server's audit key, never one minted here.
	key, err := auditKey(cfg.Config, false)
	if err != nil {
		return err
	}
	l, closeDB, err := openAuditLog(ctx, cfg.Config, key)
	if err != nil {
		return err
	}
	defer closeDB()
	rep, err := l.Verify(ctx, cps...)
	if err != nil {
		return err
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

func auditCheckpoint(ctx context.Context, e env, fs *flagSet, args []string) error {
	out := fs.String("out", "", "write the checkpoint to this file instead of stdout")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit checkpoint: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	key, err := auditlog.LoadOrCreateSigningKey(auditSigningKeyPath(cfg.Config))
	if err != nil {
		return err
	}
	// Like the signing key above, in development the audit key is the data directory's,
	// made if missing: a key made now authenticates no event, so a chain holding events
	// the server authenticated with another key is refused, never signed.
	auditKey, err := auditKey(cfg.Config, true)
	if err != nil {
		return err
	}
	l, closeDB, err := openAuditLog(ctx, cfg.Config, auditKey)
	if err != nil {
		return err
	}
	defer closeDB()
	doc, _, err := l.Checkpoint(ctx, key)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = e.stdout.Write(doc)
		return err
	}
	return os.WriteFile(*out, doc, 0o644)
}

// openAuditLog opens the store's audit log; key (nil: none) is the audit key that
// authenticates events.
func openAuditLog(ctx context.Context, cfg config.Config, key []byte) (*auditlog.Log, func(), error) {
	l, _, closeDB, err := openAudit(ctx, cfg, key)
	return l, closeDB, err
}

// openAudit opens the store, checks that its schema is current, and returns it with its
// audit log under key (nil: none), for a command that audits what it changes.
func openAudit(ctx context.Context, cfg config.Config, key []byte) (*auditlog.Log, store.DB, func(), error) {
	db, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := db.Ready(ctx); err != nil {
		db.Close()
		return nil, nil, nil, fmt.Errorf("%w (run cobranca migrate)", err)
	}
	l, err := auditlog.New(db, key, auditlog.Options{})
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return l, db, func() { db.Close() }, nil
}
