package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
)

// cliStoreTimeout bounds the rate-limit store's answer to the CLI.
const cliStoreTimeout = 10 * time.Second

// writeOff writes an invoice off as the person whose access token --token - (stdin) or
// --token-file gives: `cobranca write-off --token - --invoice ID --customer ID --amount CENTS
// --reason TEXT [--key KEY]`.
// The call goes through pipeline.Admin, the check the admin API runs too: a person (not an
// agent) holding the tool's role and scope, stepped up as its contract demands; the tier's
// budget; the tool's own rules; audited invoice.written_off. A refusal is the
// *failure.Error, with its stable code (exit status 1).
func writeOff(ctx context.Context, e env, fs *flagSet, args []string) error {
	tokens := addTokenFlags(fs, "the person's")
	invoice := fs.String("invoice", "", "the invoice's id, as the operator writes it (`ID`)")
	customer := fs.String("customer", "", "the invoice's customer, a stored customer's id (`ID`)")
	amount := fs.Int64("amount", 0, "the amount written off, in BRL cents (`CENTS`)")
	reason := fs.String("reason", "", "why the debt will not be collected (`TEXT`)")
	keyFlag := fs.String("key", "", "the idempotency key (`KEY`); by default a new one, printed: run the command again with it when its answer was lost, and the first write-off is answered again")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.misuse("unexpected argument %q", fs.Arg(0))
	}
	token, err := tokenArg(e, fs, tokens, "the person's")
	if err != nil {
		return err
	}
	key := *keyFlag
	if key == "" {
		key = "cli-" + rand.Text()
	}
	cfg, err := loadSettings(e.environ)
	if err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	quiet := slog.New(slog.DiscardHandler)
	authn, err := newAuthenticator(ctx, cfg.auth, quiet)
	if err != nil {
		return err
	}
	tools, err := productTools(cfg)
	if err != nil {
		return err
	}
	// Only the forbidden tools: the pipeline of the admin surfaces runs nothing else (and the
	// others need what a server has: an outbox, request-state keys).
	var forbidden []pipeline.Tool
	for _, t := range tools {
		if !t.Contract.VisibleToAgents() {
			forbidden = append(forbidden, t)
		}
	}
	callArgs, err := json.Marshal(map[string]any{"invoiceId": *invoice, "customerId": *customer, "amountCents": *amount,
		"reason": *reason, "idempotencyKey": key})
	if err != nil {
		return err
	}
	return withAdmin(ctx, e, func(a admin) error {
		auditKey, err := auditKey(a.cfg, true)
		if err != nil {
			return err
		}
		digest, err := auditlog.NewDigester(auditKey)
		if err != nil {
			return err
		}
		keys, err := idempotency.New(a.db.Dialect(), a.cfg.IdempotencyTTL, nil)
		if err != nil {
			return err
		}
		// One call on a cold connection: the store may take longer than a serving replica's
		// warm pool (limits.DefaultStoreTimeout) to answer the budget's question.
		cfg.limits.StoreTimeout = cliStoreTimeout
		limiter, release, err := newLimiter(ctx, a.db, cfg, quiet, nil)
		if err != nil {
			return err
		}
		defer release()
		pipe, err := pipeline.New(pipeline.Options{Tools: forbidden, Logger: quiet, Auditor: pipeline.NewAuditor(a.log, digest),
			Limits: limiter, DB: a.db, Keys: keys, StepUp: a.cfg.StepUpACR})
		if err != nil {
			return err
		}
		pr, err := authn.Verify(ctx, token)
		if err != nil { // nobody verified: nothing to audit, as for approvals
			return &failure.Error{Code: approval.CodeInvalidToken, Field: "token", Message: "is not a valid access token of this server's issuer", Err: err}
		}
		res := pipe.Admin(ctx, pipeline.Call{Principal: pr, RequestID: request.NewID(), Tool: collections.WriteOffName, Args: callArgs})
		switch res.Kind {
		case pipeline.Complete:
			var w collections.WriteOffResult
			if err := json.Unmarshal(res.Structured, &w); err != nil {
				return err
			}
			_, err := fmt.Fprintf(e.stdout, "written off %s (customer %s, %d cents) as %s by %s at %s (key %s)\n",
				w.InvoiceID, w.CustomerID, w.AmountCents, w.WriteOffID, w.WrittenOffBy, w.WrittenOffAt, key)
			return err
		case pipeline.Denied:
			return &failure.Error{Code: failure.InsufficientScope, Field: "token", Message: "lacks the scope " + strings.Join(res.Missing, " ") + " this tool requires; nothing was done"}
		}
		return res.Err
	})
}
