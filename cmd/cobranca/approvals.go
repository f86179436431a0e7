package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
)

// approvalsListMax bounds `approvals list`.
const approvalsListMax = 100

// approvalsList lists the latest approvals: `cobranca approvals list`.
func approvalsList(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.misuse("unexpected argument %q", fs.Arg(0))
	}
	return withAdmin(ctx, e, func(a admin) error {
		s, err := approval.New(a.cfg.ApprovalTTL, nil)
		if err != nil {
			return err
		}
		list, err := s.List(ctx, a.db, time.Time{}, approvalsListMax)
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tSTATE\tTOOL\tREQUESTER\tACTOR\tCREATED\tEXPIRES\tAPPROVER")
		for _, x := range list {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.ID, x.State, x.Tool, x.Requester.Subject, dash(x.Requester.Actor),
				x.Created.UTC().Format(time.RFC3339), x.Expires.UTC().Format(time.RFC3339), dash(approverOf(x)))
		}
		return w.Flush()
	})
}

func approverOf(x *approval.Action) string {
	if x.Approver == nil {
		return ""
	}
	return x.Approver.Subject
}

// approvalsShow prints one approval: `cobranca approvals show ID`.
func approvalsShow(ctx context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fs.misuse("want one ID")
	}
	return withAdmin(ctx, e, func(a admin) error {
		s, err := approval.New(a.cfg.ApprovalTTL, nil)
		if err != nil {
			return err
		}
		x, err := s.Get(ctx, a.db, fs.Arg(0))
		if errors.Is(err, approval.ErrNotFound) {
			return fmt.Errorf("approvals show: %s: %w", fs.Arg(0), err)
		}
		if err != nil {
			return err
		}
		w := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		row := func(k, v string) { fmt.Fprintf(w, "%s\t%s\n", k, v) }
		row("id", x.ID)
		row("state", string(x.State))
		row("tool", x.Tool)
		row("requested by", x.Requester.Subject)
		row("client", x.Requester.Client)
		row("actor", dash(x.Requester.Actor))
		row("created", x.Created.UTC().Format(time.RFC3339))
		row("expires", x.Expires.UTC().Format(time.RFC3339))
		row("preview", x.Preview)
		for _, fx := range x.SideEffects {
			row("side effect", fx)
		}
		if x.Approver != nil {
			row("decided by", x.Approver.Subject)
			row("acr", dash(x.Approver.ACR))
			if !x.Approver.AuthTime.IsZero() {
				row("auth time", x.Approver.AuthTime.UTC().Format(time.RFC3339))
			}
			row("decided", x.Decided.UTC().Format(time.RFC3339))
		}
		if !x.ExecutedAt.IsZero() {
			row("executed", x.ExecutedAt.UTC().Format(time.RFC3339))
		}
		return w.Flush()
	})
}

func approvalsApprove(ctx context.Context, e env, fs *flagSet, args []string) error {
	return approvalsDecide(ctx, e, fs, args, true)
}

func approvalsReject(ctx context.Context, e env, fs *flagSet, args []string) error {
	return approvalsDecide(ctx, e, fs, args, false)
}

// approvalsDecide approves or rejects an approval as the person whose
// access token --token - (stdin) or --token-file gives: `cobranca approvals approve|reject ID
// --token -`. The checks are approval.Decider's, which the approval page runs
// too.
func approvalsDecide(ctx context.Context, e env, fs *flagSet, args []string, approve bool) error {
	tokens := addTokenFlags(fs, "the deciding person's")
	ids, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return fs.misuse("want one ID")
	}
	token, err := tokenArg(e, fs, tokens, "the deciding person's")
	if err != nil {
		return err
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	authn, err := newAuthenticator(ctx, cfg.auth, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	tools, err := productTools(cfg)
	if err != nil {
		return err
	}
	return withAdmin(ctx, e, func(a admin) error {
		// The store's hooks are the server's: an approved schedule batch's send job is
		// queued here, in the decision's transaction, for the serving replicas to work.
		s, _, err := newApprovals(a.db, cfg, slog.New(slog.DiscardHandler), nil, a.log)
		if err != nil {
			return err
		}
		d := newDecider(s, a.db, authn, a.log, a.cfg, tools)
		x, err := d.Decide(ctx, ids[0], token, approve)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s %s (%s) by %s at %s\n", x.State, x.ID, x.Tool, x.Approver.Subject, x.Decided.UTC().Format(time.RFC3339))
		return err
	})
}

// tokenFlags are a command's --token and --token-file flags.
type tokenFlags struct{ token, file *string }

// addTokenFlags declares --token and --token-file; whose names whose token they give.
func addTokenFlags(fs *flagSet, whose string) tokenFlags {
	return tokenFlags{
		token: fs.String("token", "", whose+" access token, of this server's issuer: only `-`, which reads it from standard input"),
		file:  fs.String("token-file", "", "a file holding "+whose+" access token (`PATH`), instead of --token -"),
	}
}

// maxTokenBytes bounds a token read from stdin or a file.
const maxTokenBytes = 64 << 10

// tokenArg is the access token a command's flags give: --token - reads the first line of
// stdin, --token-file PATH the file. A token written on the command line itself is refused:
// every user of the machine sees a process's arguments (ps, /proc), and the shell keeps them
// in its history. whose names whose token it must be, for the usage errors.
func tokenArg(e env, fs *flagSet, f tokenFlags, whose string) (string, error) {
	var token string
	switch {
	case *f.token != "" && *f.file != "":
		return "", fs.misuse("--token and --token-file: give one")
	case *f.token == "-":
		line, err := bufio.NewReader(io.LimitReader(e.stdin, maxTokenBytes)).ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("%s: reading the token from stdin: %w", fs.cmd.name, err)
		}
		token = strings.TrimSpace(line)
	case *f.token != "":
		return "", fs.misuse("--token: takes only -, to read %s access token from standard input, or use --token-file PATH: a token written on the command line is seen by every user of the machine (ps) and kept in the shell's history", whose)
	case *f.file != "":
		b, err := os.ReadFile(*f.file)
		if err != nil {
			return "", fmt.Errorf("%s: --token-file: %w", fs.cmd.name, err)
		}
		if len(b) > maxTokenBytes {
			return "", fs.misuse("--token-file: larger than %d bytes, not an access token", maxTokenBytes)
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		return "", fs.misuse("--token - or --token-file PATH: want %s access token", whose)
	}
	return token, nil
}

// newDecider is the one check of every surface that decides approvals (the CLI, the approval
// page): the served tools' contracts, COBRANCA_STEPUP_ACR, decisions audited in alog.
func newDecider(s *approval.Store, db store.DB, authn *auth.Authenticator, alog approval.Appender, cfg config.Config, tools []pipeline.Tool) *approval.Decider {
	contracts := map[string]*contract.Contract{}
	for _, t := range tools {
		contracts[t.Contract.Name] = t.Contract
	}
	return &approval.Decider{Store: s, DB: db, Verifier: authn, Audit: alog, StepUpACR: cfg.StepUpACR,
		Contract: func(name string) *contract.Contract { return contracts[name] }}
}
