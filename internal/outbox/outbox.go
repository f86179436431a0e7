// Package outbox is the e-mail outbox: a message is enqueued in the caller's transaction (so
// it exists exactly when the change that sends it commits) and delivered by a worker inside
// `cobranca serve`, over SMTP or, in development, into .eml files.
//
// The queue is River (github.com/riverqueue/river) on the store's own database: on PostgreSQL
// its pgx driver, on SQLite its SQLite driver. River claims a job under a lock, so several
// replicas deliver each entry once; it counts the attempt when it claims the job, before the
// worker sends, so a crash between claim and send leaves a visible attempt and the job is
// rescued and sent later. Transient failures (SMTP 4xx, network) are retried with River's
// backoff; permanent ones (5xx) are recorded on the job and reported to the reference's
// owner (Owner), and so is a delivery, in the transaction that marks the job completed.
//
// Delivery is at least once: a worker that crashes after the SMTP server accepted a message
// and before River recorded the job's completion sends it again when the job is rescued. The
// Message-ID is made from the entry's id and a random token and stays the same on every attempt, so a receiver
// (or the relay) can drop the duplicate.
//
// A message may leave its body with its owner (Message.FromOwner): the entry then holds only
// what names it, and the worker asks the owner (a ContentOwner) for the body when it sends it,
// so that enqueueing thousands of reminders does not copy every body into the queue inside the
// transaction that approves them.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/mail"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/telemetry"
	"go.opentelemetry.io/otel/trace"
)

// ID identifies an outbox entry (River's job id).
type ID int64

// Message is one e-mail to send.
type Message struct {
	To      string // one bare address: someone@example.com
	Subject string
	Text    string // the plain-text body
	// HTML, when not "", is the same message as HTML: it is sent as multipart/alternative,
	// the text first. "" sends the text alone, as text/plain.
	HTML string `json:",omitempty"`
	// Related are the images the HTML shows inline, each named in it by cid:ContentID
	// (multipart/related); only with HTML.
	Related []Part `json:",omitempty"`
	// Ref names what the message is about, e.g. a reminder draft's id: the owner told of a
	// permanent failure (Owner) finds it by Ref.
	Ref string
	// FromOwner says the body (Text, HTML, Related) is not stored with the entry: the worker
	// asks the outbox's Owner, a ContentOwner, for the body of Ref when it builds the message
	// to deliver it. A body the owner keeps unchanged (a reminder draft's) need not be copied
	// into the queue in the transaction that enqueues it: a bulk send of thousands of drafts
	// would write each body twice there. Text, HTML and Related must be empty.
	FromOwner bool `json:"fromOwner,omitempty"`
}

// Content is the body of a FromOwner message, as its owner gives it (ContentOwner), checked as
// a Message's body is (Validate).
type Content struct {
	Text    string
	HTML    string
	Related []Part
}

// ContentOwner is what an outbox's Owner (Config.Owner) also is when it keeps the bodies of
// FromOwner messages. Content returns the
// body of the message about ref, read with q (the store, outside any transaction), or an error
// wrapping ErrNoContent when it has none: the message is then undeliverable and the owner told
// so. Any other error is taken as transient and the entry retried. The body must be the same
// on every call for one ref: a retried entry is sent again under the same Message-ID.
type ContentOwner interface {
	Content(ctx context.Context, q store.Querier, ref string) (Content, error)
}

// ErrNoContent is what a ContentOwner's Content wraps when it has no body for ref: a failure no
// retry mends.
var ErrNoContent = errors.New("outbox: the owner has no body for the message")

// Part is an image a message's HTML shows inline: <img src="cid:ContentID">.
type Part struct {
	ContentID   string // dot-atom@dot-atom (RFC 2392), without the angle brackets
	ContentType string // image/png, image/jpeg or image/gif
	Name        string // the file name a mail client offers to save it as
	Data        []byte
}

// Limits of a message's fields, in bytes (Related in parts).
const (
	MaxSubject   = 998 // RFC 5322's line limit
	MaxText      = 256 << 10
	MaxRef       = 200
	MaxRelated   = 4
	MaxPart      = 64 << 10
	MaxPartName  = 100
	MaxContentID = 200
)

// relatedTypes are the content types an inline part may have: images every mail client shows.
var relatedTypes = []string{"image/png", "image/jpeg", "image/gif"}

// Validate reports the first field of m that cannot be sent, as invalid_arguments naming it.
func (m *Message) Validate() error {
	bad := func(field, msg string) error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	switch {
	case CheckAddress(m.To) != nil:
		return bad("to", "must be one bare e-mail address, like name@example.com")
	case strings.TrimSpace(m.Subject) == "":
		return bad("subject", "must not be empty")
	case len(m.Subject) > MaxSubject:
		return bad("subject", "must be at most "+strconv.Itoa(MaxSubject)+" bytes")
	case strings.ContainsAny(m.Subject, "\r\n"):
		return bad("subject", "must be one line")
	case m.Ref == "":
		return bad("ref", "must not be empty")
	case len(m.Ref) > MaxRef:
		return bad("ref", "must be at most "+strconv.Itoa(MaxRef)+" bytes")
	case m.FromOwner && m.Text != "":
		return bad("text", "must be empty when the owner gives the body (fromOwner)")
	case m.FromOwner && m.HTML != "":
		return bad("html", "must be empty when the owner gives the body (fromOwner)")
	case m.FromOwner && len(m.Related) > 0:
		return bad("related", "must be empty when the owner gives the body (fromOwner)")
	}
	return checkBody(m.Text, m.HTML, m.Related)
}

// Validate reports the first field of c that cannot be sent, as invalid_arguments naming it:
// the checks of a Message's body.
func (c *Content) Validate() error { return checkBody(c.Text, c.HTML, c.Related) }

// checkBody reports the first field of a message's body that cannot be sent.
func checkBody(text, html string, related []Part) error {
	bad := func(field, msg string) error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	switch {
	case len(text) > MaxText:
		return bad("text", "must be at most "+strconv.Itoa(MaxText)+" bytes")
	case len(html) > MaxText:
		return bad("html", "must be at most "+strconv.Itoa(MaxText)+" bytes")
	case len(related) > 0 && html == "":
		return bad("related", "inline parts need an HTML body that shows them")
	case len(related) > MaxRelated:
		return bad("related", "must hold at most "+strconv.Itoa(MaxRelated)+" parts")
	}
	seen := make(map[string]bool, len(related))
	for i, p := range related {
		field := "related[" + strconv.Itoa(i) + "]."
		switch {
		case !contentID(p.ContentID):
			return bad(field+"contentId", "must be dot-atom@dot-atom of letters, digits, '-' and '_' (RFC 2392), like qr@example, at most "+strconv.Itoa(MaxContentID)+" bytes")
		case seen[strings.ToLower(p.ContentID)]:
			return bad(field+"contentId", "names another part of the message too")
		case !strings.Contains(html, "cid:"+p.ContentID):
			return bad(field+"contentId", "is not named by the HTML (cid:"+p.ContentID+")")
		case !slices.Contains(relatedTypes, p.ContentType):
			return bad(field+"contentType", "must be one of "+strings.Join(relatedTypes, ", "))
		case !partName(p.Name):
			return bad(field+"name", "must be 1 to "+strconv.Itoa(MaxPartName)+" of A-Z a-z 0-9 . _ -, not starting with a dot")
		case len(p.Data) == 0:
			return bad(field+"data", "must not be empty")
		case len(p.Data) > MaxPart:
			return bad(field+"data", "must be at most "+strconv.Itoa(MaxPart)+" bytes")
		}
		seen[strings.ToLower(p.ContentID)] = true
	}
	return nil
}

// contentID reports whether s is a Content-ID without its angle brackets, as dot-atom@dot-atom
// (RFC 2392's cid refers to RFC 5322's msg-id) of the characters that need no escaping in a
// cid: URL nor in HTML: letters, digits, '-' and '_' (a subset of RFC 5322's atext).
func contentID(s string) bool {
	left, right, ok := strings.Cut(s, "@")
	return ok && len(s) <= MaxContentID && dotAtom(left) && dotAtom(right)
}

// dotAtom reports whether s is atoms of letters, digits, '-' and '_', joined by single dots.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// partName reports whether s is a plain file name, written as it is in the part's headers.
func partName(s string) bool {
	if s == "" || len(s) > MaxPartName || s[0] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// CheckAddress reports whether s is one bare e-mail address (name@example.com): no display
// name, no list, no comment — the form of a message's To and of the sender's address.
func CheckAddress(s string) error {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s || !strings.Contains(s, "@") {
		return errors.New("must be one bare e-mail address, like name@example.com")
	}
	return nil
}

// Owner is told what became of a message, in a transaction of the store's, so that the
// package that enqueued it (reminders) records it on what Ref names. Delivered runs in the
// transaction that marks the entries completed: the owner's record and River's commit together,
// so an entry is never completed without its owner knowing, nor recorded delivered while River
// still counts it running (a worker killed before that commit sends again, under the same
// Message-ID, and is told then). It is told of the messages accepted while the last such
// transaction committed, together (one or more; see Accepted). Undeliverable runs in a
// transaction of its own before the entry is cancelled. A report may come more than once for
// one entry (a retried job): the owner changes what entry's message is for once.
type Owner interface {
	Delivered(ctx context.Context, tx store.Tx, accepted []Accepted) error
	Undeliverable(ctx context.Context, tx store.Tx, ref string, entry int64, reason string, at time.Time) error
}

// Accepted is a message the mail server accepted, as Owner.Delivered is told of it. A process's
// workers record the messages accepted while one group's transaction commits in the next
// group's, one transaction for many (worker.delivered).
type Accepted struct {
	Ref   string    // the message's Ref
	Entry int64     // its outbox entry
	At    time.Time // when the server accepted it (Config.Now)
}

// Config is what New needs.
type Config struct {
	// Sender delivers messages: SMTP (NewSMTP) or a directory of .eml files (Dir).
	Sender Sender
	// Driver is River's driver on the store's database (internal/outbox/queue.For).
	Driver *Driver
	// From is the sender's address (bare); its domain is the right-hand side of Message-IDs.
	From string
	// Owner, when not nil, is told of deliveries and permanent failures.
	Owner Owner
	// Now is the clock of those reports (time.Now when nil).
	Now func() time.Time
	// Workers is how many messages one process sends at once (default DefaultWorkers); River
	// works SlotsPerWorker times as many of the queue's jobs, reading and recording around the
	// sends.
	Workers int
	// MaxAttempts bounds the retries of a transient failure (default 25, River's).
	MaxAttempts int
	// PollInterval is how often an idle worker looks for jobs (default River's, 1 s).
	PollInterval time.Duration
	// PollOnly has River poll for new jobs every PollInterval instead of hearing of them
	// (LISTEN), as behind a pooler in transaction mode, which cannot keep a LISTEN.
	PollOnly bool
	// RescueAfter is how long a claimed job may run before it counts as lost (its worker
	// crashed) and is retried (default one hour, River's); one send is cut off after half of
	// it, or after a minute if that is less.
	RescueAfter time.Duration
	// StopTimeout is how long Run, once its context is done, lets the messages being sent
	// finish before it cancels them (default a minute).
	StopTimeout time.Duration
	Logger      *slog.Logger
	// Tracing, when not nil, gives every job a span of its own (outbox.job),
	// with the SMTP send (smtp.send) and the store's work under it. Nil: no
	// tracing.
	Tracing trace.TracerProvider
	// Jobs are other kinds of job the outbox's River client works besides e-mail, each in a
	// queue of its own (internal/notify's webhook deliveries and digests): one client, one
	// leader and one set of River's maintenance per process.
	Jobs []Job
	// Periodic are River's periodic jobs of those kinds: River's leader (one replica at a
	// time) inserts each at its interval (internal/collections' tick of schedules' batches).
	Periodic []*river.PeriodicJob

	// beforeSend and afterSend, set by the tests only (export_test.go), run around the send:
	// the crash tests stop the worker there.
	beforeSend, afterSend func(ID)
	// retryAfter, set by the tests only (export_test.go), replaces River's retry schedule
	// (about a second before the first retry): the fast tier checks that a 4xx is retried,
	// not how long River waits.
	retryAfter time.Duration
}

// DefaultWorkers is how many messages one process sends at once unless Config says otherwise
// (serve: COBRANCA_MAIL_WORKERS). Each sends on one SMTP connection, kept open between messages
// (SMTP): 16 of them reach a relay that answers in 30 ms about 500 times a second
// (docs/benchmarks.md, "Outbox throughput": more than the queue's own QueueCost lets one
// process record); 2 reached it 60 times a second.
const DefaultWorkers = 16

// SlotsPerWorker is how many of the queue's jobs River works at once for each worker that
// sends (Config.Workers): while Workers jobs hand their messages to the mail server, the others
// read their bodies before and record their deliveries after, so that no SMTP connection waits
// for the store. With as many jobs as workers, a worker's connection idled while it recorded:
// at 30 ms a message, 0.77 of direct sending at the same concurrency on PostgreSQL, 0.50 on
// SQLite; with twice as many, 0.95 and 0.75; with three times, 0.96 and 0.90, and 15-20 % more
// a second with an instant mail server (docs/benchmarks.md, "Outbox throughput", issue 31).
const SlotsPerWorker = 3

// fetchCooldown is the least time between two of River's fetches of new jobs (River's default
// is 100 ms). A fetch claims at most as many jobs as there are idle workers, so with River's
// default a process delivered at most Workers messages per 100 ms whatever the mail server's
// speed: 20 a second with 2 workers. It costs a query only while jobs wait and a worker is
// idle: an idle outbox still looks every PollInterval.
const fetchCooldown = 5 * time.Millisecond

// Driver is River's driver on the store's database, with how to reach the driver's transaction
// inside a store transaction: the outbox queues on whichever it is given (RiverDriver), and
// links neither store nor driver itself.
type Driver struct {
	queue func(*river.Config) (queue, error)
}

// RiverDriver is the Driver of River's driver d, whose transaction tx finds inside a store
// transaction (an error when the transaction is another store's).
func RiverDriver[TDriver riverdriver.Driver[TTx], TTx any](d TDriver, tx func(context.Context, store.Tx) (TTx, error)) *Driver {
	return &Driver{queue: func(rc *river.Config) (queue, error) {
		c, err := river.NewClient(d, rc)
		if err != nil {
			return nil, err
		}
		return riverQueue[TDriver, TTx]{c, tx}, nil
	}}
}

// queue is the part of River's client the outbox uses, whatever the driver's transaction type.
type queue interface {
	insertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error)
	// insertManyTx inserts jobs in one statement and returns what River made of them, in
	// no promised order.
	insertManyTx(ctx context.Context, tx store.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error)
	// completeTx marks the running jobs completed in tx, in one statement.
	completeTx(ctx context.Context, tx store.Tx, jobs []*river.Job[Args]) error
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
	StopAndCancel(ctx context.Context) error
}

// defaultRescueAfter is Config.RescueAfter's default: River's own (an hour).
const defaultRescueAfter = time.Hour

// Outbox enqueues messages and, once Run, delivers them.
type Outbox struct {
	q           queue
	w           *worker
	maxAttempts int
	workers     int
	cooldown    time.Duration // River's fetch cooldown: see Estimate
	domain      string        // of Config.From: the right-hand side of Message-IDs
	stopTimeout time.Duration
	rescueAfter time.Duration // Config.RescueAfter, or River's default
	log         *slog.Logger
}

// New returns an outbox on db, whose migrations (River's included) are applied, queuing on
// cfg.Driver: River's driver on the same database (internal/outbox/queue picks it).
func New(db store.DB, cfg Config) (*Outbox, error) {
	if cfg.Sender == nil {
		return nil, errors.New("outbox: no sender")
	}
	if cfg.Driver == nil {
		return nil, errors.New("outbox: no River driver (Config.Driver)")
	}
	if err := CheckAddress(cfg.From); err != nil {
		return nil, fmt.Errorf("outbox: From %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	workers := river.NewWorkers()
	w := &worker{cfg: cfg, db: db, sending: make(chan struct{}, cmp(cfg.Workers, DefaultWorkers))}
	w.content, _ = cfg.Owner.(ContentOwner)
	if cfg.Tracing != nil {
		w.tracer = cfg.Tracing.Tracer(telemetry.ScopeName)
	}
	if err := river.AddWorkerSafely(workers, w); err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	queues := map[string]river.QueueConfig{queueName: {MaxWorkers: SlotsPerWorker * cmp(cfg.Workers, DefaultWorkers)}}
	o := &Outbox{maxAttempts: cfg.MaxAttempts, domain: domainOf(cfg.From), workers: cmp(cfg.Workers, DefaultWorkers),
		stopTimeout: cmp(cfg.StopTimeout, time.Minute), rescueAfter: cmp(cfg.RescueAfter, defaultRescueAfter), log: cfg.Logger}
	for _, j := range cfg.Jobs {
		if _, dup := queues[j.Queue]; dup || j.Queue == "" || j.add == nil {
			return nil, fmt.Errorf("outbox: job queue %q is empty, taken, or not made by NewJob", j.Queue)
		}
		queues[j.Queue] = river.QueueConfig{MaxWorkers: cmp(j.Workers, 1)}
		if err := j.add(workers, o); err != nil {
			return nil, fmt.Errorf("outbox: job queue %s: %w", j.Queue, err)
		}
	}
	rc := &river.Config{
		Queues:               queues,
		Workers:              workers,
		PeriodicJobs:         cfg.Periodic,
		Logger:               cfg.Logger,
		MaxAttempts:          cfg.MaxAttempts,
		FetchPollInterval:    cfg.PollInterval,
		PollOnly:             cfg.PollOnly,
		FetchCooldown:        fetchCooldown,
		RescueStuckJobsAfter: o.rescueAfter,
		// River requires a job's timeout not to exceed the time after which it is rescued; half
		// of it leaves a send cut off at its timeout as long again to be recorded before the
		// rescuer takes the job for lost and sends the message a second time.
		JobTimeout: min(time.Minute, o.rescueAfter/2),
	}
	if cfg.retryAfter > 0 {
		rc.RetryPolicy = fixedRetry(cfg.retryAfter)
	}
	if cfg.PollInterval > 0 {
		rc.FetchCooldown = min(cfg.PollInterval, fetchCooldown) // River wants it no longer
	}
	o.cooldown = rc.FetchCooldown
	q, err := cfg.Driver.queue(rc)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	o.q, w.q = q, q
	o.w = w
	return o, nil
}

// fixedRetry is a retry schedule of one fixed delay (Config.retryAfter, the tests').
type fixedRetry time.Duration

func (d fixedRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Duration(d)) }

func cmp[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// queueName is River's queue for e-mail.
const queueName = "email"

// Entry is an enqueued message: its id in the outbox (River's job id) and the Message-ID it
// carries, angle brackets included, the same on every attempt.
type Entry struct {
	ID        ID
	MessageID string
}

// errNoContentOwner refuses a FromOwner message to an outbox whose Owner would not give its body:
// a fault of the program's wiring, not of the message.
var errNoContentOwner = errors.New("outbox: enqueue: the message's body comes from its owner (FromOwner), but the outbox's Owner does not give bodies (ContentOwner)")

// check validates m and that the outbox can deliver it.
func (o *Outbox) check(m *Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	if m.FromOwner && o.w.content == nil {
		return errNoContentOwner
	}
	return nil
}

// Enqueue adds m to the outbox inside tx: it is delivered if and only if tx commits.
func (o *Outbox) Enqueue(ctx context.Context, tx store.Tx, m Message) (Entry, error) {
	if err := o.check(&m); err != nil {
		return Entry{}, err
	}
	a := Args{Message: m, Token: ident.New("")} // 128 random bits: see MessageID
	r, err := o.q.insertTx(ctx, tx, a, &river.InsertOpts{Queue: queueName, MaxAttempts: o.maxAttempts})
	if err != nil {
		return Entry{}, fmt.Errorf("outbox: enqueue: %w", err)
	}
	return Entry{ID: ID(r.Job.ID), MessageID: "<" + MessageID(ID(r.Job.ID), a.Token, o.domain) + ">"}, nil
}

// EnqueueOnce is Enqueue for a message that must go once whoever asks for it: a message to
// m.To about m.Ref is added only if River holds none yet (River's unique jobs, by those two
// fields; it keeps a delivered entry a day, its completed-job retention). A second call
// returns the first's entry, with again set. internal/notify tells each approver of an
// approval so, whichever replica or retry asks.
func (o *Outbox) EnqueueOnce(ctx context.Context, tx store.Tx, m Message) (e Entry, again bool, err error) {
	if err := o.check(&m); err != nil {
		return Entry{}, false, err
	}
	a := Args{Message: m, Token: ident.New(""), Once: m.To + " " + m.Ref}
	r, err := o.q.insertTx(ctx, tx, a, &river.InsertOpts{Queue: queueName, MaxAttempts: o.maxAttempts,
		UniqueOpts: river.UniqueOpts{ByArgs: true}})
	if err != nil {
		return Entry{}, false, fmt.Errorf("outbox: enqueue: %w", err)
	}
	if r.UniqueSkippedAsDuplicate {
		var first Args
		if err := json.Unmarshal(r.Job.EncodedArgs, &first); err != nil {
			return Entry{}, false, fmt.Errorf("outbox: enqueue: read the first entry: %w", err)
		}
		a.Token = first.Token
	}
	return Entry{ID: ID(r.Job.ID), MessageID: "<" + MessageID(ID(r.Job.ID), a.Token, o.domain) + ">"}, r.UniqueSkippedAsDuplicate, nil
}

// Job is a kind of job besides e-mail that the outbox's River client works (Config.Jobs), in
// a queue of its own; NewJob makes one.
type Job struct {
	Queue   string
	Workers int // how many of its jobs one process works at once (default 1)
	add     func(*river.Workers, *Outbox) error
}

// NewJob is the Job of args T, worked by work in queue, workers at once per process. work is
// handed the outbox, to enqueue messages or jobs from; its error is River's: nil completes
// the job, river.JobCancel gives it up, any other is retried with River's backoff. A job runs
// at most as long as a message's send may (half of Config.RescueAfter, at most a minute).
func NewJob[T river.JobArgs](queue string, workers int, work func(ctx context.Context, o *Outbox, job *river.Job[T]) error) Job {
	return newJob(queue, workers, false, work)
}

// NewLongJob is NewJob for work that may take longer than a message's send: a job may run
// until it would count as lost, Config.RescueAfter (River's hour by default). A longer bound
// would also put off the rescue of a job whose process died: River rescues a job only once
// its own timeout has passed.
func NewLongJob[T river.JobArgs](queue string, workers int, work func(ctx context.Context, o *Outbox, job *river.Job[T]) error) Job {
	return newJob(queue, workers, true, work)
}

func newJob[T river.JobArgs](queue string, workers int, long bool, work func(ctx context.Context, o *Outbox, job *river.Job[T]) error) Job {
	return Job{Queue: queue, Workers: workers, add: func(ws *river.Workers, o *Outbox) error {
		w := &jobWorker[T]{work: func(ctx context.Context, job *river.Job[T]) error { return work(ctx, o, job) }}
		if long {
			w.timeout = o.rescueAfter
		}
		return river.AddWorkerSafely[T](ws, w)
	}}
}

// jobWorker is a Job's River worker: its work, and its timeout when it has one of its own.
type jobWorker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	work    func(ctx context.Context, job *river.Job[T]) error
	timeout time.Duration
}

func (w *jobWorker[T]) Work(ctx context.Context, job *river.Job[T]) error { return w.work(ctx, job) }

// Timeout is the job's own bound, or, with none, the client's (River's WorkerDefaults).
func (w *jobWorker[T]) Timeout(job *river.Job[T]) time.Duration {
	if w.timeout > 0 {
		return w.timeout
	}
	return w.WorkerDefaults.Timeout(job)
}

// Insert adds a job of a Job's kind inside tx: it runs if and only if tx commits. With
// opts.UniqueOpts set, a job River already holds under the same unique key is not added
// again: again reports it, and id is the first's.
func (o *Outbox) Insert(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (id int64, again bool, err error) {
	if opts == nil || opts.Queue == "" || opts.Queue == queueName {
		return 0, false, errors.New("outbox: insert: a job goes in its Job's queue, not e-mail's")
	}
	r, err := o.q.insertTx(ctx, tx, args, opts)
	if err != nil {
		return 0, false, fmt.Errorf("outbox: insert %s: %w", args.Kind(), err)
	}
	return r.Job.ID, r.UniqueSkippedAsDuplicate, nil
}

// EnqueueMany adds ms to the outbox inside tx, in one statement (River's InsertManyTx), and
// returns their entries in the order of ms: a bulk send enqueues thousands of messages in one
// transaction, where Enqueue would make a round trip each. Every message is validated first;
// the first that cannot be sent fails the whole call, naming its index, and nothing is added.
func (o *Outbox) EnqueueMany(ctx context.Context, tx store.Tx, ms []Message) ([]Entry, error) {
	params := make([]river.InsertManyParams, len(ms))
	byToken := make(map[string]int, len(ms))
	for i := range ms {
		if err := o.check(&ms[i]); err != nil {
			return nil, fmt.Errorf("outbox: message %d: %w", i, err)
		}
		a := Args{Message: ms[i], Token: ident.New("")}
		params[i] = river.InsertManyParams{Args: a, InsertOpts: &river.InsertOpts{Queue: queueName, MaxAttempts: o.maxAttempts}}
		byToken[a.Token] = i
	}
	if len(ms) == 0 {
		return nil, nil
	}
	res, err := o.q.insertManyTx(ctx, tx, params)
	if err != nil {
		return nil, fmt.Errorf("outbox: enqueue: %w", err)
	}
	if len(res) != len(ms) {
		return nil, fmt.Errorf("outbox: enqueue: %d of %d messages inserted", len(res), len(ms))
	}
	out := make([]Entry, len(ms))
	seen := 0
	for _, r := range res {
		var a Args
		if err := json.Unmarshal(r.Job.EncodedArgs, &a); err != nil {
			return nil, fmt.Errorf("outbox: enqueue: read an inserted entry: %w", err)
		}
		i, ok := byToken[a.Token]
		if !ok || out[i].ID != 0 {
			return nil, fmt.Errorf("outbox: enqueue: an inserted entry is not one of the messages")
		}
		out[i] = Entry{ID: ID(r.Job.ID), MessageID: "<" + MessageID(ID(r.Job.ID), a.Token, o.domain) + ">"}
		seen++
	}
	if seen != len(ms) {
		return nil, fmt.Errorf("outbox: enqueue: %d of %d messages inserted", seen, len(ms))
	}
	return out, nil
}

// SMTPCost is what sending one message took, connection included, to the in-process SMTP
// server of the tests (internal/smtptest) on this project's benchmark machine: 0.9 ms
// (docs/benchmarks.md). Estimate counts it as a lower bound: a remote mail server is slower.
const SMTPCost = time.Millisecond

// QueueCost is what one message costs a process's outbox whatever the mail server's speed:
// River's fetch and completion, the read of an owner's body and its share of the transaction
// that records a group of deliveries, a few database round trips. One process delivered 470–600
// messages a second on PostgreSQL and 170–185 on SQLite with a mail server that answers at once
// (docs/benchmarks.md, "Outbox throughput", issue 31: 10 000 messages, the 2-core benchmark
// machine, busy); this is about the mean of the two.
const QueueCost = 4 * time.Millisecond

// Estimate is about how long this process's delivery workers take to send n messages queued
// at once, from the outbox's configuration: the longer of n × QueueCost (what the process
// records) and, Workers messages being sent at once and River fetching again no sooner than
// its fetch cooldown, each message taking at least SMTPCost, a round of that per Workers
// messages.
// (Measured: 10 000 messages, 16 workers, a 5 ms cooldown: 40–50 s, against 40 s estimated.)
// Other replicas delivering too make it shorter; a slow mail server, longer.
func (o *Outbox) Estimate(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	rounds := (n + o.workers - 1) / o.workers
	return max(time.Duration(n)*QueueCost, time.Duration(rounds)*max(o.cooldown, SMTPCost))
}

// EstimateRule says how Estimate counts, for a contract or a person.
func (o *Outbox) EstimateRule() string {
	return fmt.Sprintf("%s a message for the queue's own work in this server process (measured), or, if longer, %d delivery workers each round of %d messages "+
		"taking the longer of the queue's fetch cooldown (%s) and %s a message to a local mail server (measured); a remote mail server is slower",
		QueueCost, o.workers, o.workers, o.cooldown, SMTPCost)
}

// Undeliverable is how many messages this process's workers have given up on since it
// started: refused for good by the mail server (5xx), unbuildable, or deferred on every
// attempt. Each was reported to the Owner and left in River, cancelled.
func (o *Outbox) Undeliverable() int64 { return o.w.undeliverable.Load() }

// Depth is what waits in the outbox: messages not sent yet (Queued: waiting, scheduled,
// being sent or waiting for a retry), of which Retrying have been tried and wait for another
// attempt (the mail server deferred them or could not be reached, or their process died).
type Depth struct {
	Queued, Retrying int64
}

// ReadDepth reads the outbox's depth in q, counting at most limit messages (River's index
// by state and queue), so that its cost is bounded however many wait.
func ReadDepth(ctx context.Context, q store.Querier, limit int64) (Depth, error) {
	var d Depth
	// A message waiting again after an attempt is a retry, whichever state River gives it:
	// retryable, or available at once when the retry is due soon.
	err := q.QueryRow(ctx, `SELECT count(*), COALESCE(sum(CASE WHEN attempt > 0 AND state <> 'running' THEN 1 ELSE 0 END), 0) FROM (
SELECT state, attempt FROM river_job
WHERE state IN ('available', 'pending', 'retryable', 'running', 'scheduled') AND queue = $1
LIMIT $2) j`, queueName, limit).Scan(&d.Queued, &d.Retrying)
	if err != nil {
		return Depth{}, fmt.Errorf("outbox: depth: %w", err)
	}
	return d, nil
}

// Run delivers messages until ctx ends, then stops gracefully: it takes no new message and
// waits up to Config.StopTimeout for those being sent to finish and be recorded, then cancels
// what is left.
func (o *Outbox) Run(ctx context.Context) error {
	// The jobs' context is not ctx: a job is not cancelled when the stop begins (River's hard
	// stop), it finishes and is recorded; only one still running after stopTimeout is.
	if err := o.q.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("outbox: start: %w", err)
	}
	<-ctx.Done()
	start := time.Now()
	stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), o.stopTimeout)
	defer cancel()
	if err := o.q.Stop(stopCtx); err != nil {
		// What is cancelled now is retried (after RescueAfter if it stays running), under its
		// Message-ID.
		hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = errors.Join(fmt.Errorf("outbox: stop: messages still being sent after %v were cancelled: %w", o.stopTimeout, err), o.q.StopAndCancel(hardCtx))
		o.closeSender()
		return err
	}
	o.log.Info("outbox stopped: the messages being sent finished", "duration", time.Since(start).Round(time.Millisecond))
	o.closeSender()
	return nil
}

// closeSender closes the connections the sender keeps open between messages (SMTP's), once no
// worker sends.
func (o *Outbox) closeSender() {
	if c, ok := o.w.cfg.Sender.(io.Closer); ok {
		if err := c.Close(); err != nil {
			o.log.Warn("outbox: closing the mail server's connections", "error", err.Error())
		}
	}
}

// riverQueue is River's client on one driver, taking the store's transactions through tx.
type riverQueue[TDriver riverdriver.Driver[TTx], TTx any] struct {
	*river.Client[TTx]
	tx func(context.Context, store.Tx) (TTx, error)
}

func (q riverQueue[TDriver, TTx]) insertTx(ctx context.Context, tx store.Tx, args river.JobArgs, opts *river.InsertOpts) (*rivertype.JobInsertResult, error) {
	t, err := q.tx(ctx, tx)
	if err != nil {
		return nil, err
	}
	return q.InsertTx(ctx, t, args, opts)
}

func (q riverQueue[TDriver, TTx]) insertManyTx(ctx context.Context, tx store.Tx, params []river.InsertManyParams) ([]*rivertype.JobInsertResult, error) {
	t, err := q.tx(ctx, tx)
	if err != nil {
		return nil, err
	}
	return q.InsertManyTx(ctx, t, params)
}

// completeTx is River's JobCompleteTx for several jobs: the statement JobCompleteTx runs (the
// driver's JobSetStateIfRunningMany, which River's own completer also batches), given every
// job at once instead of one per call and round trip. River's public API completes one job per
// call; its driver's API, which this uses, is what River's own completion is made of. River
// does not promise that API across versions: an upgrade that changes it fails to compile here.
func (q riverQueue[TDriver, TTx]) completeTx(ctx context.Context, tx store.Tx, jobs []*river.Job[Args]) error {
	t, err := q.tx(ctx, tx)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	p := &riverdriver.JobSetStateIfRunningManyParams{
		ID:              make([]int64, len(jobs)),
		Attempt:         make([]*int, len(jobs)),
		ErrData:         make([][]byte, len(jobs)),
		FinalizedAt:     make([]*time.Time, len(jobs)),
		MetadataDoMerge: make([]bool, len(jobs)),
		MetadataUpdates: make([][]byte, len(jobs)),
		ScheduledAt:     make([]*time.Time, len(jobs)),
		State:           make([]rivertype.JobState, len(jobs)),
	}
	for i, j := range jobs {
		if j.State != rivertype.JobStateRunning {
			return fmt.Errorf("outbox: complete job %d: it is %s, not running", j.ID, j.State)
		}
		p.ID[i], p.FinalizedAt[i], p.State[i] = j.ID, &now, rivertype.JobStateCompleted
	}
	rows, err := q.Driver().UnwrapExecutor(t).JobSetStateIfRunningMany(ctx, p)
	if err != nil {
		return fmt.Errorf("outbox: complete jobs: %w", err)
	}
	if len(rows) != len(jobs) {
		return fmt.Errorf("outbox: complete jobs: %d of %d found: %w", len(rows), len(jobs), rivertype.ErrNotFound)
	}
	return nil
}
