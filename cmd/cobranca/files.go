package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/store"
)

// The audit events of the CLI's files commands (adminEvent). Like
// downloads, their Tool field names the file and link (files.Object).
const (
	fileAddedEvent   = "files.file.added"
	linkRevokedEvent = "files.link.revoked"
)

// filesAdd stores a file: `cobranca files add PATH [--customer ID]`.
func filesAdd(ctx context.Context, e env, fs *flagSet, args []string) error {
	customer := fs.String("customer", "", "the customer id the file belongs to (optional)")
	// Flags may follow PATH, as the synopsis writes them.
	paths, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(paths) != 1 {
		return fs.misuse("want one PATH")
	}
	if *customer == "" && fs.isSet("customer") {
		return fs.misuse("--customer: want a customer id (leave the flag out for a file of no customer)")
	}
	path := paths[0]
	return withAdmin(ctx, e, func(a admin) error {
		content, err := readLimited(path, a.cfg.MaxFileBytes)
		if err != nil {
			return a.refused(ctx, fileAddedEvent, "", nil, err)
		}
		var f files.File
		err = a.change(ctx, fileAddedEvent, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			f, err = files.Add(ctx, tx, files.Upload{Name: path, Content: content, CustomerID: *customer, CreatedBy: a.operator}, a.cfg.MaxFileBytes, a.now)
			return files.Object(f.ID, ""), map[string]int64{"sizeBytes": f.Size}, err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s %s\n", f.ID, hex.EncodeToString(f.SHA256[:]))
		return nil
	})
}

// readLimited reads the file at path, refusing one over maxBytes before
// reading it whole.
func readLimited(path string, maxBytes int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("files add: %s is not a regular file", path)
	} else if err := files.CheckSize(st.Size(), maxBytes); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxBytes+1)) // it may have grown since
	if err != nil {
		return nil, err
	}
	if err := files.CheckSize(int64(len(b)), maxBytes); err != nil {
		return nil, err
	}
	return b, nil
}

// filesList prints every stored file, without content.
func filesList(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.misuse("unexpected argument %q", fs.Arg(0))
	}
	return withAdmin(ctx, e, func(a admin) error {
		list, err := files.List(ctx, a.db)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tNAME\tTYPE\tBYTES\tSHA-256\tCUSTOMER\tCREATED\tBY")
		for _, f := range list {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", f.ID, f.Name, f.MediaType, f.Size,
				hex.EncodeToString(f.SHA256[:]), dash(f.CustomerID), f.CreatedAt.Format(time.RFC3339), f.CreatedBy)
		}
		return w.Flush()
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// filesRevoke revokes a download link: `cobranca files revoke LINK_ID`.
func filesRevoke(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.misuse("want one LINK_ID")
	}
	return withAdmin(ctx, e, func(a admin) error {
		var l files.Link
		err := a.change(ctx, linkRevokedEvent, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			l, err = files.Revoke(ctx, tx, fs.Arg(0), a.operator, a.now)
			return files.Object(l.FileID, l.ID), nil, err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "revoked %s (file %s) by %s at %s\n", l.ID, l.FileID, l.RevokedBy, l.RevokedAt.Format(time.RFC3339))
		return nil
	})
}

// admin is what an audited admin command works with.
type admin struct {
	cfg      config.Config
	db       store.DB
	log      *auditlog.Log
	operator string
	now      time.Time
}

// change runs fn in a transaction with its audit event (adminEvent named
// event, Tool the objects fn names, its details): both commit, or neither.
// A refusal fn returns (a *failure.Error) is audited rejected, on its own,
// and returned.
func (a admin) change(ctx context.Context, event string, fn func(ctx context.Context, tx store.Tx) (object string, details map[string]int64, err error)) error {
	err := a.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		object, details, err := fn(ctx, tx)
		if err != nil {
			return err
		}
		ev := adminEvent(event, auditlog.Allowed)
		ev.Tool, ev.Details = object, details
		return a.log.Append(ctx, tx, ev)
	})
	return a.refused(ctx, event, "", nil, err)
}

// refused audits err, when it is a refusal of what the operator asked
// (a *failure.Error), as event rejected with its code and details (counts
// saying what was refused, or nil): someone tried, and nothing changed. It
// returns err.
func (a admin) refused(ctx context.Context, event, object string, details map[string]int64, err error) error {
	fe, ok := failure.As(err)
	if !ok {
		return err
	}
	ev := adminEvent(event, auditlog.Rejected)
	ev.Tool, ev.FailureCode, ev.Details = object, string(fe.Code), details
	if aerr := a.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return a.log.Append(ctx, tx, ev) }); aerr != nil {
		return errors.Join(err, aerr)
	}
	return err
}

// withAdmin runs fn with the store, the audit log (under the server's
// audit key; in development the data directory's, made if missing) and the
// operator.
func withAdmin(ctx context.Context, e env, fn func(admin) error) error {
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	key, err := auditKey(cfg.Config, true)
	if err != nil {
		return err
	}
	l, db, closeDB, err := openAudit(ctx, cfg.Config, key)
	if err != nil {
		return err
	}
	defer closeDB()
	return fn(admin{cfg: cfg.Config, db: db, log: l, operator: operator(), now: time.Now()})
}
