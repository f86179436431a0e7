package outbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/wneessen/go-mail"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// Args is an outbox entry as River stores it (the job's args): the message, and the random
// token of its Message-ID ("" in an entry enqueued before tokens, which keeps the id-only form).
type Args struct {
	Message
	Token string `json:"token,omitempty"`
	// Once, set by EnqueueOnce only (to and ref), is the entry's unique key: River adds no
	// second entry with the same one while it holds the first.
	Once string `json:"once,omitempty" river:"unique"`
}

// Kind names the job in River's table.
func (Args) Kind() string { return "cobranca.email" }

// MessageID returns the Message-ID of entry id with token, without angle brackets, the same
// on every attempt: id.token.outbox@domain. The entry's id alone is unique only in one
// database — another installation, or this one restored from a backup, numbers its entries
// again from where it stands — and a receiver that drops duplicates by Message-ID would drop
// another message under a reused one; the random token makes it unique everywhere (RFC 5322
// §3.6.4).
func MessageID(id ID, token, domain string) string {
	s := strconv.FormatInt(int64(id), 10)
	if token != "" {
		s += "." + token
	}
	return s + ".outbox@" + domain
}

// worker sends one entry per job.
type worker struct {
	river.WorkerDefaults[Args]
	cfg Config
	db  store.DB
	q   queue
	// content is cfg.Owner when it gives the bodies of FromOwner messages, else nil.
	content ContentOwner
	// undeliverable counts the messages this process gave up on (permanent).
	undeliverable atomic.Int64
	tracer        trace.Tracer // nil: no tracing
	group         group        // the deliveries waiting to be recorded
	// sending holds a token for each message being handed to the mail server: at most
	// Config.Workers at once, while River works SlotsPerWorker times as many jobs.
	sending chan struct{}
}

// The spans of a job: the job's, a trace's root, and the send's under it.
const (
	spanJob  = "outbox.job"
	spanSend = "smtp.send"
)

// Work delivers job's message, in a span of its own when tracing is on: the
// attempt and what became of it (delivered, retry, undeliverable), never the
// message's address, subject or reference.
func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	if w.tracer == nil {
		return w.work(ctx, job)
	}
	ctx, span := w.tracer.Start(ctx, spanJob, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(telemetry.Attempt.Int(job.Attempt)))
	defer span.End()
	err := w.work(ctx, job)
	var cancelled *river.JobCancelError
	switch {
	case err == nil:
		span.SetAttributes(telemetry.Outcome.String("delivered"))
	case errors.As(err, &cancelled):
		span.SetAttributes(telemetry.Outcome.String("undeliverable"))
		telemetry.Fail(span, "undeliverable")
	default:
		span.SetAttributes(telemetry.Outcome.String("retry"))
		telemetry.Fail(span, "retry")
	}
	return err
}

// send hands msg to the sender, in the span smtp.send: its outcome and,
// when the mail server refused it, the reply's code (never its text, which
// may quote the address).
func (w *worker) send(ctx context.Context, msg *mail.Msg) error {
	select {
	case w.sending <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err() // nothing was sent: River tries it again
	}
	defer func() { <-w.sending }()
	ctx, span := telemetry.Start(ctx, spanSend)
	defer span.End()
	err := w.cfg.Sender.Send(ctx, msg)
	if err != nil && span.IsRecording() {
		code := "error"
		if se, ok := errors.AsType[*mail.SendError](err); ok && se.ErrorCode() > 0 {
			span.SetAttributes(telemetry.SMTPReply.Int(se.ErrorCode()))
			code = "smtp_" + strconv.Itoa(se.ErrorCode())
		}
		telemetry.Fail(span, code)
	}
	return err
}

func (w *worker) work(ctx context.Context, job *river.Job[Args]) error {
	id := ID(job.ID)
	a := job.Args
	if a.FromOwner {
		c, err := w.body(ctx, a.Ref)
		switch {
		case errors.Is(err, ErrNoContent):
			return w.permanent(ctx, id, a.Ref, "the message's body is gone (its owner has none for it)", err)
		case err != nil && job.Attempt >= job.MaxAttempts:
			return w.permanent(ctx, id, a.Ref, "the message's body could not be read in "+attempts(job.MaxAttempts), err)
		case err != nil:
			// Transient: the store could not be read. River retries with its backoff.
			w.cfg.Logger.WarnContext(ctx, "outbox: reading the message's body failed, will retry", "entry", int64(id), "attempt", job.Attempt, "error", err.Error())
			return err
		}
		if err := c.Validate(); err != nil {
			return w.permanent(ctx, id, a.Ref, "the message cannot be built", err)
		}
		a.Text, a.HTML, a.Related = c.Text, c.HTML, c.Related
	}
	msg, err := w.message(id, a, job.CreatedAt)
	if err != nil {
		return w.permanent(ctx, id, a.Ref, "the message cannot be built", err)
	}
	if w.cfg.beforeSend != nil {
		w.cfg.beforeSend(id)
	}
	err = w.send(ctx, msg)
	if err == nil && w.cfg.afterSend != nil {
		w.cfg.afterSend(id)
	}
	var se *mail.SendError
	if errors.As(err, &se) && se.ErrorCode() >= 500 && se.ErrorCode() < 600 {
		return w.permanent(ctx, id, job.Args.Ref, "the mail server refused the message ("+strconv.Itoa(se.ErrorCode())+")", safe(err))
	}
	if err != nil && job.Attempt >= job.MaxAttempts {
		// Transient, but the last attempt: River would discard the job without a word, and
		// the owner's record (a queued draft) would wait for a delivery that never comes.
		return w.permanent(ctx, id, job.Args.Ref, "the message could not be delivered in "+attempts(job.MaxAttempts)+
			" (the mail server deferred it or could not be reached each time)", safe(err))
	}
	if err != nil {
		// Transient: a 4xx or the network. River retries with its backoff.
		err = safe(err)
		w.cfg.Logger.WarnContext(ctx, "outbox: delivery failed, will retry", "entry", int64(id), "attempt", job.Attempt, "error", err.Error())
		return err
	}
	return w.delivered(ctx, job)
}

// body reads the body of a FromOwner message about ref from the outbox's owner, with the store
// and outside any transaction: one read that holds no lock while the message is sent.
func (w *worker) body(ctx context.Context, ref string) (Content, error) {
	if w.content == nil {
		// Enqueued by a process whose Owner gave bodies, worked by one whose does not: the
		// wiring of this one is wrong, and a fixed deploy delivers it.
		return Content{}, errors.New("outbox: the message's body comes from its owner, but the outbox's Owner does not give bodies (ContentOwner)")
	}
	c, err := w.content.Content(ctx, w.db, ref)
	if err != nil {
		return Content{}, fmt.Errorf("outbox: the message's body: %w", err)
	}
	return c, nil
}

// attempts says n attempts in words.
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

// delivered tells the owner that job's message was accepted, in the transaction that marks
// the job completed, shared with the other workers' deliveries of the moment (record). When
// that transaction fails the message is sent all the same: the job is left to River's own
// completion rather than retried (a retry would send it again), and the owner's record stays
// behind — logged, never guessed.
func (w *worker) delivered(ctx context.Context, job *river.Job[Args]) error {
	if w.cfg.Owner == nil {
		return nil
	}
	ctx, cancel := recording(ctx)
	defer cancel()
	if err := w.record(ctx, &delivery{job: job, at: w.cfg.Now()}); err != nil {
		w.cfg.Logger.ErrorContext(ctx, "outbox: delivered, but the delivery could not be recorded", "entry", job.ID, "error", err.Error())
	}
	return nil
}

// delivery is an accepted message waiting to be recorded (worker.record).
type delivery struct {
	job  *river.Job[Args]
	at   time.Time
	turn chan bool // true: record the group; false: recorded, with err
	err  error
}

// group is the deliveries of a process's workers waiting to be recorded while a worker
// records the group before them: group commit, without a timer. A worker whose message was
// accepted records it at once when no one is recording, together with what arrives meanwhile
// the next time; a busy outbox records as many deliveries per transaction as it has workers,
// an idle one each at once.
type group struct {
	mu      sync.Mutex
	busy    bool        // a worker is recording a group
	pending []*delivery // waiting for the next group
}

// record records d, in a group of the deliveries waiting with it, and returns the group's
// transaction's error. The worker that commits a group hands the next to the first waiting.
func (w *worker) record(ctx context.Context, d *delivery) error {
	d.turn = make(chan bool, 1)
	g := &w.group
	g.mu.Lock()
	if g.busy {
		g.pending = append(g.pending, d)
		g.mu.Unlock()
		if lead := <-d.turn; !lead {
			return d.err
		}
		g.mu.Lock()
	}
	g.busy = true
	batch := append([]*delivery{d}, g.pending...)
	g.pending = nil
	g.mu.Unlock()

	if err := w.commit(ctx, batch); err != nil && len(batch) > 1 {
		// One delivery must not hold back the others' records: each on its own.
		for _, o := range batch {
			o.err = w.commit(ctx, []*delivery{o})
		}
	} else {
		for _, o := range batch {
			o.err = err
		}
	}
	for _, o := range batch[1:] {
		o.turn <- false
	}
	err := d.err

	g.mu.Lock()
	if len(g.pending) == 0 {
		g.busy = false
		g.mu.Unlock()
		return err
	}
	next := g.pending[0]
	g.pending = g.pending[1:]
	g.mu.Unlock()
	next.turn <- true
	return err
}

// commit tells the owner of the deliveries and completes their jobs in one transaction, traced
// under the job of the worker that commits it: on PostgreSQL three round trips however many
// (BEGIN with the owner's statement, River's, COMMIT).
func (w *worker) commit(ctx context.Context, ds []*delivery) error {
	accepted := make([]Accepted, len(ds))
	jobs := make([]*river.Job[Args], len(ds))
	for i, d := range ds {
		accepted[i] = Accepted{Ref: d.job.Args.Ref, Entry: d.job.ID, At: d.at}
		jobs[i] = d.job
	}
	return w.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if err := w.cfg.Owner.Delivered(ctx, tx, accepted); err != nil {
			return err
		}
		return w.q.completeTx(ctx, tx, jobs)
	})
}

// recordTimeout bounds the transaction that tells the owner what became of a message.
const recordTimeout = 30 * time.Second

// recording is the context of the transaction that tells the owner what became of a message:
// not the job's, which ends at River's job timeout or at a shutdown — by then the mail server
// may have taken the message, and the owner must hear of it all the same.
func recording(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
}

// safe returns what may be logged and stored of a delivery error: go-mail's SendError names
// the recipients, and a server's reply text may quote them; the reason and the reply's codes
// are kept, the text left out.
func safe(err error) error {
	var se *mail.SendError
	if !errors.As(err, &se) {
		return err // the network's: addresses of the mail server, not of a customer
	}
	return fmt.Errorf("smtp: %s (reply %d %s)", se.Reason, se.ErrorCode(), se.EnhancedStatusCode())
}

// permanent records a failure that no retry mends: River keeps the job, cancelled, with the
// error, and the owner of ref is told.
func (w *worker) permanent(ctx context.Context, id ID, ref, reason string, err error) error {
	w.cfg.Logger.ErrorContext(ctx, "outbox: undeliverable", "entry", int64(id), "reason", reason)
	if w.cfg.Owner != nil {
		at := w.cfg.Now()
		ctx, cancel := recording(ctx)
		defer cancel()
		oerr := w.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			return w.cfg.Owner.Undeliverable(ctx, tx, ref, int64(id), reason, at)
		})
		if oerr != nil {
			// Retry the job: the owner must hear of it. The next attempt fails the same way.
			return errors.Join(err, oerr)
		}
	}
	w.undeliverable.Add(1)
	return river.JobCancel(errors.New(reason))
}

// message builds the e-mail of entry id.
func (w *worker) message(id ID, a Args, created time.Time) (*mail.Msg, error) {
	return Compose(w.cfg.From, id, a, created)
}

// domainOf is the domain of the bare address from: the right-hand side of its Message-IDs.
func domainOf(from string) string { return from[strings.LastIndexByte(from, '@')+1:] }

// Compose builds the e-mail of entry id, enqueued at created with args a, as the worker sends
// it from from (a bare address; its domain is the Message-ID's right-hand side). The
// throughput benchmark sends the same messages to an SMTP server directly with it.
//
// A message without HTML is one text/plain part, as before HTML existed. With HTML it is
// multipart/alternative, the text first and the HTML last (the one a client prefers, RFC 2046
// §5.1.4). With Related parts go-mail writes multipart/related whose first part, its root, is
// that multipart/alternative, and each image after it: base64, Content-Disposition inline,
// Content-ID <ContentID> (RFC 2387: the cid: URLs of the root name its siblings):
//
//	multipart/related
//	├── multipart/alternative
//	│   ├── text/plain; charset=UTF-8 (quoted-printable)
//	│   └── text/html; charset=UTF-8 (quoted-printable)
//	└── image/png; name="…" (base64, inline, Content-ID: <…>)
func Compose(from string, id ID, a Args, created time.Time) (*mail.Msg, error) {
	m := mail.NewMsg()
	if err := m.From(from); err != nil {
		return nil, err
	}
	if err := m.To(a.To); err != nil {
		return nil, err
	}
	m.Subject(a.Subject)
	m.SetMessageIDWithValue(MessageID(id, a.Token, domainOf(from)))
	m.SetDateWithValue(created)
	m.SetBodyString(mail.TypeTextPlain, a.Text)
	if a.HTML == "" {
		return m, nil
	}
	m.AddAlternativeString(mail.TypeTextHTML, a.HTML)
	for _, p := range a.Related {
		if err := m.EmbedReader(p.Name, bytes.NewReader(p.Data), mail.WithFileContentID("<"+p.ContentID+">"),
			mail.WithFileContentType(mail.ContentType(p.ContentType))); err != nil {
			return nil, err
		}
	}
	return m, nil
}
