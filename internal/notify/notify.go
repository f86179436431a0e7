// Package notify tells the approvers when a critical call's approval waits: an e-mail through
// the outbox to each approver (COBRANCA_APPROVER_EMAILS) and/or a signed JSON post to a chat's
// incoming webhook (COBRANCA_APPROVAL_WEBHOOK_URL), in Portuguese or English
// (COBRANCA_NOTIFY_LANGUAGE).
//
// The story of one approval:
//
//  1. approval.Store.Create records the pending action and, in the same transaction, calls the
//     hook (Hook): what it queues exists exactly when the approval does, and an approval that
//     rolls back told nobody.
//  2. The hook ranks the approval in its digest window (the clock cut in COBRANCA_APPROVAL_
//     DIGEST_WINDOW slices). Among the first DigestAfter of its window, it is told on its own:
//     the e-mails are enqueued in the outbox (outbox.EnqueueOnce: one per approver and approval,
//     Ref the approval's id) and the webhook post is a River job unique by the approval's id.
//     Past them, it joins the window's digest: one River job per window, unique by the
//     window, scheduled at the window's end, whichever replica inserts it first.
//  3. River's workers, on any replica, deliver: the outbox sends the e-mails with its retries;
//     the webhook worker posts, retried with River's backoff until the approval expires. A
//     webhook that fails never touches the approval: it was committed before.
//  4. The digest job, at its window's end, counts the window's approvals past the first
//     DigestAfter and tells them in one message (its e-mails and post unique by the window).
//
// A notification says only what cannot hold customer data: the approval's id and link, the
// tool's name, the requester's subject, actor and client, the times, and counts. The preview,
// which names customers, invoices and amounts, is never read (Notice has no field for it).
package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store"
)

// Defaults of Config.
const (
	DefaultDigestAfter  = 10
	DefaultDigestWindow = 10 * time.Minute
	// DefaultTimeout bounds one webhook post.
	DefaultTimeout = 10 * time.Second
)

// MaxEmails bounds Config.Emails: more approvers are a mailing list's job.
const MaxEmails = 50

// webhookAttempts bounds a post's retries: River's backoff (attempt⁴ seconds) makes 8
// attempts about an hour and a half, and a post past the approval's expiry is dropped anyway.
const webhookAttempts = 8

// pendingLimit bounds the count of waiting approvals a notification reports ("1000 or more").
const pendingLimit = 1000

// Config is what New needs.
type Config struct {
	// DB is the store the approvals are in: the digest reads and enqueues there.
	DB store.DB
	// Approvals is the store of pending actions (its clock, its count of those waiting).
	Approvals *approval.Store
	// PublicURL is where people open an approval (PublicURL/approvals/{id}) and the console's
	// inbox (PublicURL/console).
	PublicURL string
	// Emails are the approvers told by e-mail (bare addresses); none: no e-mail.
	Emails []string
	// WebhookURL, when set, is posted a JSON notification signed with WebhookSecret (at least
	// 32 bytes; required with the URL).
	WebhookURL    string
	WebhookSecret []byte
	// DigestAfter approvals of a window are told one by one; those after them, in one digest
	// at the window's end. DigestWindow is the window's length. Defaults: 10, 10 minutes.
	DigestAfter  int
	DigestWindow time.Duration
	// Language is what the notifications are written in (default: DefaultLanguage).
	Language Language
	// Client posts to the webhook (default: DefaultTimeout, no redirects followed).
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
}

// Notifier queues and delivers the approvers' notifications.
type Notifier struct {
	db        store.DB
	approvals *approval.Store
	public    string
	emails    []string
	hookURL   string
	secret    []byte
	after     int
	window    time.Duration
	lang      Language
	client    *http.Client
	now       func() time.Time
	log       *slog.Logger
}

// New checks cfg, reporting every problem at once, each naming its field. A Config with
// neither e-mails nor a webhook is valid: Enabled reports false, and serve leaves it out.
func New(cfg Config) (*Notifier, error) {
	bad := func(field, msg string) error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	var errs []error
	if cfg.DB == nil {
		errs = append(errs, bad("db", "is required"))
	}
	if cfg.Approvals == nil {
		errs = append(errs, bad("approvals", "is required"))
	}
	if u, err := url.Parse(cfg.PublicURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, bad("publicURL", "must be the server's http(s) base URL"))
	}
	if len(cfg.Emails) > MaxEmails {
		errs = append(errs, bad("emails", "must be at most "+strconv.Itoa(MaxEmails)+" addresses"))
	}
	for i, e := range cfg.Emails {
		if err := outbox.CheckAddress(e); err != nil {
			errs = append(errs, bad("emails["+strconv.Itoa(i)+"]", err.Error()))
		}
	}
	if cfg.WebhookURL != "" {
		if u, err := url.Parse(cfg.WebhookURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, bad("webhookURL", "must be an http(s) URL"))
		}
		if len(cfg.WebhookSecret) < 32 {
			errs = append(errs, bad("webhookSecret", "must be at least 32 bytes with a webhook URL"))
		}
	}
	if cfg.DigestAfter < 0 || cfg.DigestAfter > 1000 {
		errs = append(errs, bad("digestAfter", "must be from 1 to 1000 (0: the default, 10)"))
	}
	if cfg.DigestWindow < 0 || cfg.DigestWindow > 0 && cfg.DigestWindow < time.Second {
		errs = append(errs, bad("digestWindow", "must be at least a second (0: the default, 10m)"))
	}
	if _, ok := languages[cfg.Language]; !ok && cfg.Language != "" {
		errs = append(errs, bad("language", "must be "+string(Portuguese)+" or "+string(English)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	n := &Notifier{db: cfg.DB, approvals: cfg.Approvals, public: strings.TrimRight(cfg.PublicURL, "/"), emails: cfg.Emails,
		hookURL: cfg.WebhookURL, secret: cfg.WebhookSecret, after: cfg.DigestAfter, window: cfg.DigestWindow,
		lang: cfg.Language, client: cfg.Client, now: cfg.Now, log: cfg.Logger}
	if n.after == 0 {
		n.after = DefaultDigestAfter
	}
	if n.window == 0 {
		n.window = DefaultDigestWindow
	}
	if n.lang == "" {
		n.lang = DefaultLanguage
	}
	if n.client == nil {
		// A redirect would carry the signed post elsewhere: it counts as the receiver's refusal.
		n.client = &http.Client{Timeout: DefaultTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if n.now == nil {
		n.now = time.Now
	}
	if n.log == nil {
		n.log = slog.New(slog.DiscardHandler)
	}
	return n, nil
}

// Enabled reports whether anybody is told: an e-mail or a webhook is configured.
func (n *Notifier) Enabled() bool { return len(n.emails) > 0 || n.hookURL != "" }

// The River queues of the notifications' jobs (the e-mails go in the outbox's).
const (
	webhookQueue = "approval_webhook"
	digestQueue  = "approval_digest"
)

// Jobs are the notifications' kinds of job, for outbox.Config.Jobs: the webhook posts and the
// digests, worked by the outbox's River client on every replica.
func (n *Notifier) Jobs() []outbox.Job {
	return []outbox.Job{
		outbox.NewJob(webhookQueue, 2, n.post),
		outbox.NewJob(digestQueue, 1, n.digest),
	}
}

// Hook is approval.Store's hook (OnCreate) that queues, through o, the notification of each
// approval created, in the transaction that creates it (the package comment, steps 1–2).
func (n *Notifier) Hook(o *outbox.Outbox) approval.Hook {
	return func(ctx context.Context, tx store.Tx, a *approval.Action) error {
		if !n.Enabled() {
			return nil
		}
		start := a.Created.Truncate(n.window)
		rank, err := count(ctx, tx, start, a.Created.Add(time.Microsecond), int64(n.after)+1)
		if err != nil {
			return err
		}
		if rank > int64(n.after) {
			// Past the window's first: told in its digest. The first approval past them
			// inserts the job; the others find it there (unique by the window).
			_, _, err := o.Insert(ctx, tx, digestArgs{Start: start.UnixMicro(), Window: n.window.Microseconds()},
				&river.InsertOpts{Queue: digestQueue, ScheduledAt: start.Add(n.window), UniqueOpts: river.UniqueOpts{ByArgs: true}})
			return err
		}
		waiting, _, err := n.approvals.Pending(ctx, tx, pendingLimit)
		if err != nil {
			return err
		}
		nt := Notice{Approval: a.ID, Tool: a.Tool, Requester: a.Requester, Created: a.Created, Expires: a.Expires,
			Waiting: waiting, Link: n.public + "/approvals/" + a.ID}
		return n.queue(ctx, tx, o, a.ID, nt, a.Expires)
	}
}

// count is how many approvals were created from start to before end, at most limit.
func count(ctx context.Context, q store.Querier, start, end time.Time, limit int64) (int64, error) {
	var n int64
	err := q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM approval WHERE created_at >= $1 AND created_at < $2 LIMIT $3) w`,
		start.UnixMicro(), end.UnixMicro(), limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("notify: count approvals: %w", err)
	}
	return n, nil
}

// queue enqueues nt's e-mails and webhook post in tx, under ref (an approval's id, or a
// digest's): once each whoever asks again, River's unique jobs. The post is dropped past until
// (zero: never).
func (n *Notifier) queue(ctx context.Context, tx store.Tx, o *outbox.Outbox, ref string, nt Notice, until time.Time) error {
	subject, text := nt.Mail(n.lang)
	for _, to := range n.emails {
		if _, _, err := o.EnqueueOnce(ctx, tx, outbox.Message{To: to, Subject: subject, Text: text, Ref: ref}); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
	}
	if n.hookURL == "" {
		return nil
	}
	args := webhookArgs{Ref: ref, Text: nt.Chat(n.lang)}
	if !until.IsZero() {
		args.Until = until.Unix()
	}
	_, _, err := o.Insert(ctx, tx, args, &river.InsertOpts{Queue: webhookQueue, MaxAttempts: webhookAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	return err
}

// digestArgs is a digest window's job: its start and length, in microseconds.
type digestArgs struct {
	Start  int64 `json:"start"`
	Window int64 `json:"window"`
}

func (digestArgs) Kind() string { return "cobranca.approval_digest" }

// digest tells, at a window's end, the approvals of the window past its first DigestAfter, in
// one message (step 4). Run again (a retry, a rescue), it queues nothing new: its e-mails and
// post are unique by the window.
func (n *Notifier) digest(ctx context.Context, o *outbox.Outbox, job *river.Job[digestArgs]) error {
	start := time.UnixMicro(job.Args.Start)
	end := start.Add(time.Duration(job.Args.Window) * time.Microsecond)
	total, err := count(ctx, n.db, start, end, 1_000_000)
	if err != nil {
		return err
	}
	folded := total - int64(n.after)
	if folded <= 0 {
		return nil // only after a change of COBRANCA_APPROVAL_DIGEST_AFTER: each was told
	}
	waiting, _, err := n.approvals.Pending(ctx, n.db, pendingLimit)
	if err != nil {
		return err
	}
	nt := Notice{Digest: true, From: start, To: end, Told: int64(n.after), Folded: folded, Waiting: waiting, Link: n.public + "/console"}
	ref := "approval-digest-" + strconv.FormatInt(job.Args.Start, 10)
	return n.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return n.queue(ctx, tx, o, ref, nt, time.Time{}) })
}
