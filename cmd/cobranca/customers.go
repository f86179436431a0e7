package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
)

// auditCustomersImported is the audit event of `cobranca customers import`.
const auditCustomersImported = "customers.imported"

// customersImport creates or updates the customers of a CSV file (id, name,
// email), all of them or, when any row is bad, none; one audit event says
// how many (created, updated, unchanged; or, rejected, how many rows were
// bad), never who.
func customersImport(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.misuse("want one FILE, or - to read stdin")
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
	recs, err := customers.ParseCSV(r)
	var bad *customers.ImportError
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	return withAdmin(ctx, e, func(a admin) error {
		if bad != nil { // someone tried, and nothing changed: audited rejected
			return a.refused(ctx, auditCustomersImported, "", map[string]int64{"badRows": int64(bad.BadRows())},
				&failure.Error{Code: failure.InvalidArguments, Message: bad.Error()})
		}
		var n customers.Counts
		var discarded int64
		err := a.change(ctx, auditCustomersImported, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			if n, err = customers.Import(ctx, tx, recs, a.now); err != nil {
				return "", nil, err
			}
			// As prepare_reminder's overwrite does: a draft that greets a customer's old name
			// or goes to its old address is not left for a person to approve and send.
			for _, r := range recs {
				d, err := reminders.DiscardNotTo(ctx, tx, r.ID, reminders.Recipient{Name: r.Name, Email: r.Email}, a.now)
				if err != nil {
					return "", nil, err
				}
				discarded += d
			}
			return "", map[string]int64{"rows": int64(len(recs)), "created": int64(n.Created), "updated": int64(n.Updated), "unchanged": int64(n.Unchanged), "draftsDiscarded": discarded}, nil
		})
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "imported %d customer(s): %d created, %d updated, %d unchanged\n", len(recs), n.Created, n.Updated, n.Unchanged)
		if err == nil && discarded > 0 {
			_, err = fmt.Fprintf(e.stdout, "%d open reminder draft(s) to an old name or address discarded\n", discarded)
		}
		return err
	})
}
