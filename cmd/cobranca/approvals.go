package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
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
// access token --token is: `cobranca approvals approve|reject ID --token
// TOKEN`. The checks are approval.Decider's, which the approval page runs
// too.
func approvalsDecide(ctx context.Context, e env, fs *flagSet, args []string, approve bool) error {
	tokenFlag := fs.String("token", "", "the deciding person's access token, of this server's issuer (`TOKEN`; - reads it from stdin)")
	ids, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(ids) != 1 {
		return fs.misuse("want one ID")
	}
	token, err := tokenArg(e, fs, *tokenFlag, "the deciding person's")
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
	tools, err := productTools(cfg.Config)
	if err != nil {
		return err
	}
	return withAdmin(ctx, e, func(a admin) error {
		s, err := approval.New(a.cfg.ApprovalTTL, nil)
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

// tokenArg is the access token a command's --token flag gives: as written, or, for "-", the
// first line of stdin (so that it stays out of the shell's history and the process list).
// whose names whose token it must be, for the usage error when there is none.
func tokenArg(e env, fs *flagSet, flag, whose string) (string, error) {
	token := flag
	if token == "-" {
		line, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("%s: reading the token from stdin: %w", fs.cmd.name, err)
		}
		token = strings.TrimSpace(line)
	}
	if token == "" {
		return "", fs.misuse("--token: want %s access token", whose)
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
