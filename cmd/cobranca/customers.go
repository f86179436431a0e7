package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// auditCustomersImported is the audit event of `cobranca customers import`.
const auditCustomersImported = "customers.imported"

// customersImport creates or updates the customers of a CSV file (id, name,
// email), all of them or, when any row is bad, none; one audit event says
// how many, never who.
func customersImport(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(e.stderr, "cobranca customers import: want one FILE, or - to read stdin")
		fs.help(e.stderr)
		return exitUsage
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	var r io.Reader = e.stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	recs, parseErr := customers.ParseCSV(r)
	var bad *customers.ImportError
	if parseErr != nil && !errors.As(parseErr, &bad) {
		return parseErr
	}

	db, err := openStore(ctx, cfg.Config, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Ready(ctx); err != nil {
		return fmt.Errorf("%w (run cobranca migrate)", err)
	}
	key, err := auditKey(cfg.Config, true)
	if err != nil {
		return err
	}
	l, err := auditlog.New(db, key, auditlog.Options{})
	if err != nil {
		return err
	}
	now := time.Now()
	if bad != nil {
		// A refused import is audited too: someone tried, and nothing changed.
		ev := adminEvent(auditCustomersImported, auditlog.Rejected)
		ev.FailureCode = string(failure.InvalidArguments)
		ev.Details = map[string]int64{"badRows": int64(len(bad.Rows) + bad.More)}
		if err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return l.Append(ctx, tx, ev) }); err != nil {
			return errors.Join(parseErr, err)
		}
		return parseErr
	}
	var n customers.Counts
	err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		if n, err = customers.Import(ctx, tx, recs, now); err != nil {
			return err
		}
		ev := adminEvent(auditCustomersImported, auditlog.Allowed)
		ev.Details = map[string]int64{"rows": int64(len(recs)), "created": int64(n.Created), "updated": int64(n.Updated), "unchanged": int64(n.Unchanged)}
		return l.Append(ctx, tx, ev)
	})
	if err != nil {
		return fmt.Errorf("nothing imported: %w", err)
	}
	_, err = fmt.Fprintf(e.stdout, "imported %d customer(s): %d created, %d updated, %d unchanged\n", len(recs), n.Created, n.Updated, n.Unchanged)
	return err
}
