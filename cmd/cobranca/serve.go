package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/riverqueue/river"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/authserver"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/metrics"
	"github.com/cobranca/cobranca/internal/notify"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/queue"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/server"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/web"
	"go.opentelemetry.io/otel/trace"
)

func serve(ctx context.Context, e env, fs *flagSet, args []string) (err error) {
	if err := fs.parse(args); err != nil {
		return err
	}
	cfg, err := loadSettings(e.environ)
	if err = errors.Join(err, checkDevelopmentReach(cfg.Config)); err != nil {
		return fmt.Errorf("configuration:\n%w", err)
	}
	log := newLogger(e.stderr, cfg.Config)
	// Everything serve starts stops in reverse order when it returns: after the HTTP server
	// has drained, the listeners, then the workers (the outbox's last sends, the audit spool's
	// last attempt, the writer, the sealer), then the store, then the traces' last export.
	var bg tasks
	defer func() { err = errors.Join(err, bg.stop(ctx)) }()
	traces, err := tracing(ctx, cfg.Config, log)
	if err != nil {
		return err
	}
	bg.onStop("traces", 0, func(ctx context.Context) error {
		// A collector that cannot be reached costs spans, never the exit status.
		if err := traces.Shutdown(ctx); err != nil {
			log.Warn("traces", "err", err)
		}
		return nil
	})
	tuneMemory(cfg.Config, e.environ)
	bg.run(ctx, "memory returner", 0, func(ctx context.Context) { newMemoryReturner(cfg.MemoryLimit).run(ctx, 10*time.Second) })

	authn, err := newAuthenticator(ctx, cfg.auth, log)
	if err != nil {
		return err
	}
	db, err := openStore(ctx, cfg.Config, log)
	if err != nil {
		return err
	}
	bg.onStop("store", 0, func(context.Context) error { return db.Close() })
	if cfg.AutoMigrate {
		applied, err := db.Migrate(ctx)
		if err != nil {
			return err
		}
		for _, m := range applied {
			log.Info("migration applied", "version", m.Version, "name", m.Name, "duration", m.Duration)
		}
	}
	if err := db.Ready(ctx); err != nil {
		return fmt.Errorf("%w: run cobranca migrate, or set COBRANCA_AUTO_MIGRATE=true", err)
	}
	key, err := auditKey(cfg.Config, true)
	if err != nil {
		return err
	}
	digest, err := auditlog.NewDigester(key)
	if err != nil {
		return err
	}
	spool, err := openAuditSpool(cfg.Config, log)
	if err != nil {
		return err
	}
	bg.onStop("audit spool file", 0, func(context.Context) error { return spool.Close() })
	alog, err := auditlog.New(db, key, auditlog.Options{Logger: log, Spool: spool})
	if err != nil {
		return err
	}
	bg.run(ctx, "audit sealer", 0, func(ctx context.Context) { alog.RunSealer(ctx, time.Second) })
	// Standalone audit events are group-committed; the writer stops after the HTTP server
	// has drained, and before the sealer.
	bg.run(ctx, "audit writer", 0, alog.RunWriter)
	// The spool appends the events kept while the store was down (also those a previous
	// run left); it stops after the HTTP server has drained, with a last attempt, before
	// the writer and the sealer.
	bg.run(ctx, "audit spool", 0, func(ctx context.Context) { alog.RunSpool(ctx, time.Second) })

	// Refusals anyone can cause (forms, sign-in callbacks, forged download links) are audited
	// as one event per class and client a minute, with the count; the last minute's are
	// written when the HTTP server has drained, before the spool and the writer stop.
	refusals, err := auditlog.NewRefusals(auditlog.RefusalsOptions{Write: alog.Keep, Digest: digest, Logger: log,
		Client: func(r *http.Request) string { return limits.ClientIP(r, cfg.TrustedProxyHeader) }})
	if err != nil {
		return err
	}
	refusalsCtx, stopRefusals := context.WithCancel(context.WithoutCancel(ctx))
	refusalsDone := make(chan struct{})
	go func() { defer close(refusalsDone); refusals.Run(refusalsCtx, time.Minute) }()
	defer func() { stopRefusals(); <-refusalsDone }()

	m := metrics.New()
	// The console's health page says how many requests were refused recently.
	refused := &recentRefusals{next: m, now: time.Now}
	limiter, releaseLimiter, err := newLimiter(ctx, db, cfg, log, mcpapi.NewEdgeRefusalAuditor(alog, log, refused))
	if err != nil {
		return err
	}
	bg.onStop("rate-limit backend", 0, func(context.Context) error { releaseLimiter(); return nil })
	bg.run(ctx, "rate limiter", 0, func(ctx context.Context) { limiter.Run(ctx, time.Minute) })

	// The e-mail outbox's delivery worker: told to stop when the shutdown begins (it takes no
	// new message; those being sent finish, within shutdownTimeout), waited for after the
	// HTTP server has drained. What it has not sent waits in the store for another replica or
	// the next start, and so does what a call in flight enqueues meanwhile.
	// Its River client also runs the approvers' notifications and the schedules' daily batches
	// (newApprovals).
	approvals, mailer, err := newApprovals(db, cfg, log, traces.Provider(), alog)
	if err != nil {
		return err
	}
	stopOutbox := bg.run(ctx, "outbox", shutdownTimeout+taskStopTimeout, func(ctx context.Context) {
		if err := mailer.Run(ctx); err != nil {
			log.Error("outbox stopped", "err", err)
		}
	})

	links, err := downloadLinks(cfg.Config)
	if err != nil {
		return err
	}
	tools, err := servedTools(collectionSettings(cfg), links, mailer)
	if err != nil {
		return err
	}
	states, err := requestStateRing(cfg.Config)
	if err != nil {
		return err
	}
	keys, err := idempotency.New(db.Dialect(), cfg.IdempotencyTTL, nil)
	if err != nil {
		return err
	}
	// Expired idempotency keys and spent request-state nonces are deleted by
	// every replica (an idempotent DELETE); the reaper stops with the server.
	bg.run(ctx, "idempotency reaper", 0, func(ctx context.Context) { keys.RunReaper(ctx, db, time.Minute, log) })
	pipe, err := pipeline.New(pipeline.Options{Tools: tools, Logger: log, Auditor: pipeline.NewAuditor(alog, digest),
		Limits: limiter, Metrics: m, DB: db, Keys: keys, States: states, StepUp: cfg.StepUpACR,
		Approvals: approvals, PublicURL: cfg.Public()})
	if err != nil {
		return err
	}
	mcpHandler, err := mcpapi.New(mcpapi.Options{Logger: log, MaxBodyBytes: cfg.MaxBodyBytes, Scopes: authn,
		Pipeline: pipe, DisableFastPath: !cfg.FastPath, Prompts: diagnosticPrompts(), Resources: diagnosticResources()})
	if err != nil {
		return err
	}
	// In development mode the server is its own authorization server.
	var authServer http.Handler
	if authn.DevMode() {
		as, err := authserver.New(authserver.Options{Auth: authn, DB: db, Scopes: contract.Scopes(mcpHandler.Contracts()),
			StepUpACR: cfg.StepUpACR, Roles: consoleRoles(mcpHandler.Contracts(), pipe.AdminContracts()), Logger: log,
			TrustedProxyHeader: cfg.TrustedProxyHeader})
		if err != nil {
			return err
		}
		authServer = as
	}
	pages, err := web.New(web.Config{
		Signin: signin.Config{Issuer: authn.Issuer(), ClientID: webClientID(cfg.Config), ClientSecret: cfg.OIDCClientSecret,
			PublicURL: cfg.Public(), AgentClientIDs: cfg.AgentClientIDs, RolesClaim: authn.RolesClaim(), DB: db, Keys: states, Refusals: refusals},
		Decider:      newDecider(approvals, db, authn, alog, cfg.Config, tools),
		Admin:        pipe,
		WriteOffTool: collections.WriteOffName,
		Runner:       pipe,
		// The payments page matches a payment as the tool does.
		MatchPaymentTool: collections.MatchPaymentName,
		Ledger: func(ctx context.Context, a *approval.Action) (string, error) {
			return collections.ApprovalLedger(ctx, db, a.Tool, a.Preview, time.Now())
		},
		Tools:   mcpHandler.Contracts,
		Budgets: &cfg.limits.Policies,
		Health:  &consoleHealth{db: db, approvals: approvals, alog: alog, refusals: refused},
		Charts:  &web.Charts{Calls: auditlog.NewCallsCache(alog, time.Now, 0), Ledger: db},
		// The customers and outbox pages read the store.
		Customers: db,
		Outbox:    db,
		Audit:     alog,
		// The import page writes the ledger, as `cobranca invoices import` does.
		Imports: db,
		// The schedules pages read the store; their forms pause and resume as the tools do.
		Schedules:          db,
		PauseScheduleTool:  collections.PauseScheduleName,
		ResumeScheduleTool: collections.ResumeScheduleName,
		Logger:             log,
	})
	if err != nil {
		return fmt.Errorf("the approval page: %w", err)
	}
	// The health page's ledger charts are read here, in the background, never by a page.
	bg.run(ctx, "console charts", 0, pages.RunCharts)
	drain := server.NewDrain()
	handler := server.Routes(server.Deps{
		Logger:         log,
		Auth:           authn,
		MCP:            mcpHandler,
		AllowedOrigins: cfg.AllowedOrigins,
		AllowedHosts:   cfg.AllowedHosts,
		MaxBodyBytes:   cfg.MaxBodyBytes,
		Ready:          drain.Ready(db.Ready),
		Limits:         limiter,
		Downloads:      &files.Downloads{DB: db, Links: links, Audit: alog, Refusals: refusals, Logger: log},
		AuthServer:     authServer,
		Web:            pages,
		Admin:          pipe,
		WriteOffTool:   collections.WriteOffName,
		Sessions:       pages,
		Tracing:        traces.Provider(),
	})

	rawLn, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	ln := server.LimitConns(rawLn, server.ConnLimits{Total: connCap(cfg.MaxConns, log), PerAddr: cfg.MaxConnsPerAddr, Logger: log})
	srv := ln.HTTPServer(drain.Handler(handler), server.DefaultTimeouts, slog.NewLogLogger(log.Handler(), slog.LevelWarn))
	registerServerMetrics(m, mcpHandler, limiter, ln, spool)
	registerOperatorMetrics(m, db, approvals, alog, mailer, time.Now, log)
	build := buildInfo()
	m.BuildInfo(build.Version, build.Revision, build.Go)

	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (COBRANCA_METRICS_ADDR): %w", cfg.MetricsAddr, err)
		}
		msrv := &http.Server{Handler: server.MetricsRoutes(m.Handler()), ReadHeaderTimeout: 5 * time.Second,
			WriteTimeout: 10 * time.Second, IdleTimeout: time.Minute}
		// Stops after the public listener has drained, so a scrape during the
		// drain still answers; before the workers stop.
		bg.run(ctx, "metrics listener", 0, func(context.Context) {
			if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics listener stopped", "err", err)
			}
		})
		bg.onStop("metrics listener shutdown", 0, msrv.Shutdown)
		log.Info("metrics served", "addr", "http://"+mln.Addr().String()+"/metrics")
	}

	if cfg.DebugAddr != "" {
		dln, err := net.Listen("tcp", cfg.DebugAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s (COBRANCA_DEBUG_ADDR): %w", cfg.DebugAddr, err)
		}
		dsrv := &http.Server{Handler: server.Debug(), ReadHeaderTimeout: 10 * time.Second,
			WriteTimeout: (server.MaxProfileSeconds + 10) * time.Second}
		bg.run(ctx, "debug listener", 0, func(context.Context) {
			if err := dsrv.Serve(dln); !errors.Is(err, http.ErrServerClosed) {
				log.Error("debug listener stopped", "err", err)
			}
		})
		bg.onStop("debug listener close", 0, func(context.Context) error { return dsrv.Close() })
		log.Info("profiles served", "addr", "http://"+dln.Addr().String()+"/debug/pprof/")
	}
	// Logged once every listener is up: whoever waits for this line (an
	// operator, a script, the tests) finds the metrics and profile
	// listeners already announced.
	log.Info("cobranca listening", "version", build.Version, "revision", build.Revision, "addr", ln.Addr().String(), "mcp", "http://"+ln.Addr().String()+"/mcp", "config", cfg)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	return shutdown(context.WithoutCancel(ctx), log, srv, errc, drain, cfg.DrainDelay, stopOutbox)
}

// shutdownTimeout bounds serve's shutdown, counted from the signal, or from the end of the
// drain delay (COBRANCA_DRAIN_DELAY): the requests in flight finish within it, and so do the
// messages the outbox is sending (both at once).
const shutdownTimeout = 20 * time.Second

// shutdown is serve's answer to SIGTERM: /readyz answers 503 at once; for delay
// (COBRANCA_DRAIN_DELAY) requests are still served, and mail still sent, while load balancers
// that poll readiness take the replica out; then new requests are refused (drain) and the outbox
// takes no new message (stopOutbox: those being sent finish), the requests in flight finish
// within shutdownTimeout, and the listener closes. serve's stops (tasks) follow (the outbox's
// last sends, the audit writer, …); whatever was not sent waits in the store for another
// replica or the next start. (A second signal during the delay changes nothing: the platform's
// kill timeout is what ends it early.)
func shutdown(ctx context.Context, log *slog.Logger, srv *http.Server, served <-chan error, drain *server.Drain, delay time.Duration, stopOutbox func()) error {
	if delay > 0 {
		drain.Unready()
		log.Info("shutting down: not ready, still serving while load balancers stop sending", "delay", delay)
		time.Sleep(delay)
	}
	start := time.Now()
	stopOutbox()
	inflight := drain.Start()
	log.Info("shutting down: not ready, refusing new requests, finishing those in flight", "in_flight", inflight, "deadline", shutdownTimeout)
	ctx, cancel := context.WithTimeout(ctx, shutdownTimeout)
	defer cancel()
	err := drain.Wait(ctx)
	if err == nil {
		err = srv.Shutdown(ctx)
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: requests still in flight after %v were cut off: %w", shutdownTimeout, err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("requests drained", "duration", time.Since(start).Round(time.Millisecond))
	return nil
}

// connCap is the total connection cap: the configured one, kept to half
// the open-file limit so that at the cap the process still has descriptors
// for its database, its other listeners and the connection being accepted.
// (Go raises the soft limit to the hard one at start.)
func connCap(configured int, log *slog.Logger) int {
	nofile, ok := openFileLimit()
	if !ok || configured == 0 || nofile/2 >= uint64(configured) {
		return configured
	}
	c := int(max(nofile/2, 16))
	log.Warn("COBRANCA_MAX_CONNS lowered to half the open-file limit", "configured", configured, "open_file_limit", nofile, "max_conns", c)
	return c
}

// registerServerMetrics exposes counters other packages keep.
func registerServerMetrics(m *metrics.Metrics, h *mcpapi.Handler, l *limits.Limiter, conns *server.ConnLimiter, spool *auditlog.Spool) {
	m.GaugeFunc("cobranca_audit_spool_events", "Audit records waiting in the spool for the store (events and loss counts); above 0 for long, the store is refusing or unreachable.",
		func() float64 { return float64(spool.Len()) })
	m.CounterFunc("cobranca_audit_events_set_aside_total", "Spooled audit events the store refused for their content, written to the dead-letter file (audit-spool.dead) with a gap event in the chain.",
		func() float64 { return float64(spool.SetAside()) })
	m.GaugeFunc("cobranca_connections_open", "Connections the public listener holds open.",
		func() float64 { return float64(conns.Stats().Open) })
	m.CounterFunc("cobranca_connections_refused_total", "Connections closed at once because their client address (IPv6: /64) was at COBRANCA_MAX_CONNS_PER_ADDR, or, at COBRANCA_MAX_CONNS, every connection was inside a request.",
		func() float64 { s := conns.Stats(); return float64(s.RefusedPerAddr + s.RefusedTotal) })
	m.CounterFunc("cobranca_connections_evicted_total", "Connections closed at COBRANCA_MAX_CONNS to admit a new one: the one waiting longest without a complete request.",
		func() float64 { return float64(conns.Stats().Evicted) })
	m.CounterFunc("cobranca_fastpath_calls_total", "tools/call answered by cobranca's fast path rather than go-sdk.",
		func() float64 { return float64(h.FastCalls()) })
	m.CounterFunc("cobranca_ratelimit_local_decisions_total", "Rate-limit decisions taken by the local fallback because the store was down.",
		func() float64 { return float64(l.Stats().LocalDecisions) })
	m.CounterFunc("cobranca_ratelimit_store_failures_total", "Rate-limit store calls that failed or timed out.",
		func() float64 { return float64(l.Stats().StoreFailures) })
	m.CounterFunc("cobranca_ratelimit_early_refusals_total", "Requests refused by the in-process pre-limiter or a remembered store refusal, without a store call.",
		func() float64 { return float64(l.Stats().EarlyRefusals) })
}

// newOutbox builds the e-mail outbox: SMTP when COBRANCA_SMTP_URL is set, else .eml files in
// COBRANCA_DATA_DIR/outbox (development; production requires the URL).
func newOutbox(db store.DB, cfg config.Config, log *slog.Logger, tracing trace.TracerProvider, periodic []*river.PeriodicJob, jobs ...outbox.Job) (*outbox.Outbox, error) {
	var sender outbox.Sender = outbox.Dir{Path: filepath.Join(cfg.DataDir, "outbox")}
	if cfg.SMTPURL != "" {
		smtp, err := outbox.NewSMTP(cfg.SMTPURL, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", config.VarSMTPURL, err)
		}
		sender = smtp
	}
	from := cfg.MailFrom
	if from == "" {
		from = "cobranca@localhost"
	}
	driver, err := queue.For(db)
	if err != nil {
		return nil, err
	}
	// Reminder drafts hear what became of their messages (sent, undeliverable).
	return outbox.New(db, outbox.Config{Driver: driver, Sender: sender, From: from, Owner: reminders.Delivery{}, Workers: cfg.MailWorkers, RescueAfter: cfg.MailRescueAfter,
		PollOnly: cfg.TransactionPooler, StopTimeout: shutdownTimeout, Logger: log, Tracing: tracing, Jobs: jobs, Periodic: periodic})
}

// newApprovals returns the approvals store and the outbox (its River client) of a process,
// wired as one, so that whichever process decides an approval queues what the decision
// entails: the approvers are told of each pending approval (COBRANCA_APPROVER_EMAILS,
// _WEBHOOK_URL; the store's OnCreate hook), and a schedule's batch approved by a person is
// queued for sending at once inside its send window, else at the window's opening
// (collections.Batcher.OnApproved, the OnDecide hook; docs/schedules.md), each in the
// transaction that records the approval or the decision. Those jobs, and each business day's
// batch of every active schedule (docs/schedules.md, "The daily batch"), run on the outbox's
// River client: serve runs it; `cobranca approvals approve|reject` only inserts with it, and
// the serving replicas work what it inserted.
func newApprovals(db store.DB, cfg settings, log *slog.Logger, tracing trace.TracerProvider, alog approval.Appender) (*approval.Store, *outbox.Outbox, error) {
	approvals, err := approval.New(cfg.ApprovalTTL, nil)
	if err != nil {
		return nil, nil, err
	}
	notifier, err := newNotifier(db, approvals, cfg.Config, log)
	if err != nil {
		return nil, nil, err
	}
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		return nil, nil, err
	}
	batcher := &collections.Batcher{DB: db, Approvals: approvals, Templates: tpl, Settings: collectionSettings(cfg), Audit: alog}
	mailer, err := newOutbox(db, cfg.Config, log, tracing, []*river.PeriodicJob{batcher.Periodic()},
		append(notifier.Jobs(), batcher.Jobs()...)...)
	if err != nil {
		return nil, nil, err
	}
	batcher.Mail = mailer
	if notifier.Enabled() {
		approvals.OnCreate(notifier.Hook(mailer))
	}
	approvals.OnDecide(batcher.OnApproved(mailer))
	return approvals, mailer, nil
}

// newNotifier is what tells the approvers of a pending approval, from the configuration; its
// errors name the variable.
func newNotifier(db store.DB, approvals *approval.Store, cfg config.Config, log *slog.Logger) (*notify.Notifier, error) {
	n, err := notify.New(notify.Config{DB: db, Approvals: approvals, PublicURL: cfg.Public(), Emails: cfg.ApproverEmails,
		WebhookURL: cfg.ApprovalWebhookURL, WebhookSecret: []byte(cfg.ApprovalWebhookSecret),
		DigestAfter: cfg.ApprovalDigestAfter, DigestWindow: cfg.ApprovalDigestWindow,
		Language: notify.Language(cfg.NotifyLanguage), Logger: log})
	if err != nil {
		return nil, fmt.Errorf("approver notifications (%s, %s): %w", config.VarApproverEmails, config.VarWebhookURL, err)
	}
	return n, nil
}

// webClientID is the pages' OIDC client: COBRANCA_OIDC_CLIENT_ID (required in production), or
// in development the development authorization server's built-in client.
func webClientID(cfg config.Config) string {
	if cfg.OIDCClientID != "" {
		return cfg.OIDCClientID
	}
	return auth.DevWebClientID
}

// consoleRoles are the roles the development sign-in page fills in: every role the contracts
// name, and the console's.
func consoleRoles(contracts ...[]*contract.Contract) []string {
	roles := contract.Roles(slices.Concat(contracts...))
	for _, r := range web.Roles {
		if !slices.Contains(roles, r) {
			roles = append(roles, r)
		}
	}
	slices.Sort(roles)
	return roles
}
