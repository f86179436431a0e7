package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

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
	file := fs.String("file", "", "check this export (made by audit export) offline, instead of the database's chain")
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
	if *file != "" {
		return auditVerifyFile(e, *file, cfg, cps)
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

// keyQuiet is how long no event may have been written under a key before audit rotate-key
// retires it without --force: a recent one means a replica still runs with it.
const keyQuiet = 10 * time.Minute

// auditRotateKey retires the old audit keys (COBRANCA_AUDIT_KEY after its first entry): from
// the event that records it, audit verify reports any event under a retired key.
func auditRotateKey(ctx context.Context, e env, fs *flagSet, args []string) error {
	force := fs.Bool("force", false, "retire a key even though an event was written under it in the last 10 minutes (it leaked and is being used)")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("audit rotate-key: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if len(cfg.AuditOldKeys) == 0 {
		return errors.New("audit rotate-key: COBRANCA_AUDIT_KEY holds one key: give every replica the new key first and the old one after it (\"NEW,OLD\"), then run this with the same setting")
	}
	l, closeDB, err := openAuditLog(ctx, cfg.Config, []byte(cfg.AuditKey))
	if err != nil {
		return err
	}
	defer closeDB()
	olds, err := l.OldKeys(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	var busy []error
	for _, k := range olds {
		if !k.Retired && k.Events > 0 && now.Sub(k.Last) < keyQuiet && !*force {
			busy = append(busy, fmt.Errorf("key %s sealed an event at %s: a replica still runs with it", k.ID, k.Last.Format(time.RFC3339)))
		}
	}
	if len(busy) > 0 {
		return fmt.Errorf("audit rotate-key: nothing retired; give every replica the new key first (or, if the old key leaked, retire it now with --force):\n%w", errors.Join(busy...))
	}
	for _, k := range olds {
		if k.Retired {
			fmt.Fprintf(e.stdout, "key %s: already retired\n", k.ID)
			continue
		}
		if err := l.RetireKey(ctx, k.ID, adminEvent(auditlog.KeyRetiredEvent, auditlog.Allowed)); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "key %s: retired (%d events under it); new events are sealed under key %s\n", k.ID, k.Events, l.SealingKeyID())
	}
	if _, err := l.Seal(ctx); err != nil {
		return err
	}
	return nil
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
	var old [][]byte
	if key != nil && cfg.AuditKey != "" {
		for _, k := range cfg.AuditOldKeys {
			old = append(old, []byte(k))
		}
	}
	l, err := auditlog.New(db, key, auditlog.Options{OldKeys: old})
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	return l, db, func() { db.Close() }, nil
}
