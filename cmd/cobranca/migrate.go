package main

import (
	"context"
	"fmt"
	"log/slog"
	"text/tabwriter"
	"time"
)

// migrate applies the pending migrations (run it as the database's owner role), or with
// "status" lists them.
func migrate(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	status := false
	switch {
	case fs.NArg() == 0 || fs.NArg() == 1 && fs.Arg(0) == "up":
	case fs.NArg() == 1 && fs.Arg(0) == "status":
		status = true
	default:
		return fmt.Errorf("migrate: want no argument, up or status")
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	if cfg.TransactionPooler {
		return fmt.Errorf("migrate: migrations take a session lock, which a transaction pooler cannot keep: run with COBRANCA_DATABASE_URL straight to PostgreSQL and COBRANCA_DATABASE_POOLER unset")
	}
	db, err := openStore(ctx, cfg.Config, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer db.Close()

	if !status {
		applied, err := db.Migrate(ctx)
		for _, m := range applied {
			fmt.Fprintf(e.stdout, "applied %05d %s (%v)\n", m.Version, m.Name, m.Duration.Round(time.Millisecond))
		}
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintln(e.stdout, "nothing to apply: the schema is current")
		}
		return nil
	}
	list, err := db.Migrations(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tNAME\tAPPLIED")
	for _, m := range list {
		when := "pending"
		if m.Applied {
			when = m.AppliedAt.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%05d\t%s\t%s\n", m.Version, m.Name, when)
	}
	return tw.Flush()
}
