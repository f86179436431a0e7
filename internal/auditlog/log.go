package auditlog

import (
	"context"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cobranca/cobranca/internal/store"
)

// DB is what the log needs from the store.
type DB interface {
	store.Querier
	Dialect() store.Dialect
	InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error
}

// Log appends, seals and verifies audit events.
type Log struct {
	db     DB
	q      queries
	now    func() time.Time
	logger *slog.Logger
	kick   chan struct{}
	// macKey authenticates the events this Log writes (deriveMACKey), under the key named
	// keyID; nil in a Log that only verifies the chain.
	macKey []byte
	keyID  string
	macs   sync.Pool // *macState under macKey
	// verifyKeys are the MAC keys of every key given (the sealing key and Options.OldKeys),
	// by key id: Verify checks each event under the key it names.
	verifyKeys map[string][]byte
	// spool keeps low-tier events while the store is down (Keep); nil: none.
	spool *Spool

	// trailScan is the most events a trail page looks at (TrailScan; less in tests).
	trailScan int

	// queue feeds RunWriter's group commits while writerUp is set.
	queue    chan pending
	writerUp atomic.Bool
}

// Options configure a Log. The zero value is usable.
type Options struct {
	// Now is the clock for event times on SQLite and for checkpoints (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Spool, when set, keeps the events Keep could not write while the store is down, and
	// RunSpool appends them once it is back.
	Spool *Spool
	// OldKeys are earlier audit keys (COBRANCA_AUDIT_KEY after its first entry): Verify
	// checks the events sealed under them, and nothing new is sealed under them.
	OldKeys [][]byte
}

// New returns a Log over db whose events are authenticated under key, the audit key
// (COBRANCA_AUDIT_KEY, at least MinKeyLen bytes): each carries a MAC under a key derived from
// it, which Verify checks. With a nil key the Log can verify the hash chain but neither write
// events (ErrNoKey) nor check their MACs.
func New(db DB, key []byte, opts Options) (*Log, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	l := &Log{db: db, q: queriesFor(db.Dialect()), now: opts.Now, logger: opts.Logger, spool: opts.Spool,
		kick: make(chan struct{}, 1), queue: make(chan pending, maxBatch), trailScan: TrailScan}
	if err := l.setKeys(key, opts.OldKeys); err != nil {
		return nil, err
	}
	return l, nil
}

// setKeys makes key the key l seals under and checks MACs under, and the old keys others it
// checks MACs under.
func (l *Log) setKeys(key []byte, oldKeys [][]byte) error {
	if key != nil {
		k, err := deriveMACKey(key)
		if err != nil {
			return err
		}
		l.macKey, l.keyID = k, KeyID(key)
		l.verifyKeys = map[string][]byte{l.keyID: k}
	}
	for _, old := range oldKeys {
		if l.macKey == nil {
			return errors.New("audit log: old audit keys without a current one")
		}
		k, err := deriveMACKey(old)
		if err != nil {
			return err
		}
		l.verifyKeys[KeyID(old)] = k
	}
	return nil
}

// KeyID names an audit key in the events sealed under it (audit_event.key_id): 16 hex digits
// derived from the key (HKDF-SHA256), which tell nothing of the key itself.
func KeyID(key []byte) string {
	id, err := hkdf.Key(sha256.New, key, nil, keyIDInfo, 8)
	if err != nil {
		panic(err) // 8 bytes of HKDF-SHA256 always derive
	}
	return hex.EncodeToString(id)
}

const keyIDInfo = "cobranca audit key id v1"

// Append writes ev inside tx, the transaction of the change it records: if tx rolls back, the
// event was never written. Seq, Time and ServerTime are set by the log and ignored here. Call
// Kick after the commit to have the event sealed at once rather than at the sealer's next tick.
func (l *Log) Append(ctx context.Context, tx store.Tx, ev Event) error {
	s, err := l.AppendStmt(ev)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, s.SQL, s.Args...); err != nil {
		return fmt.Errorf("audit append: %w", err)
	}
	return nil
}

// AppendStmt is the statement Append runs for ev, for a transaction to run it when it
// chooses (store.Tx.Defer): the event stamped, authenticated and ready to insert.
func (l *Log) AppendStmt(ev Event) (store.Stmt, error) {
	r, err := l.stamp(ev, l.now())
	if err != nil {
		return store.Stmt{}, err
	}
	return store.Stmt{SQL: l.q.insert, Args: l.insertArgs(&r)}, nil
}

// write inserts one record in q.
func (l *Log) write(ctx context.Context, q store.Querier, r *record) error {
	if _, err := q.Exec(ctx, l.q.insert, l.insertArgs(r)...); err != nil {
		return fmt.Errorf("audit append: %w", err)
	}
	return nil
}

// insertArgs are the arguments of the one-event insert of r.
func (l *Log) insertArgs(r *record) []any {
	return insertArgs(make([]any, 0, insertCount+1), r, l.db.Dialect(), l.now().UnixMicro())
}

// Record writes ev on its own, for events that go with no other change (a read-only tool
// call, a refusal), and kicks the sealer. It returns once the event is committed: through
// RunWriter's group commit when a writer runs, else as a single INSERT.
func (l *Log) Record(ctx context.Context, ev Event) error {
	r, err := l.stamp(ev, l.now())
	if err != nil {
		return err
	}
	return l.record(ctx, r)
}

func (l *Log) record(ctx context.Context, r record) error {
	if l.writerUp.Load() {
		p := pending{rec: r, done: make(chan error, 1)}
		select {
		case l.queue <- p:
		case <-ctx.Done():
			return fmt.Errorf("audit append: %w", ctx.Err())
		}
		select {
		case err := <-p.done:
			return err
		case <-ctx.Done():
			return fmt.Errorf("audit append: %w", ctx.Err())
		}
	}
	if err := l.write(ctx, l.db, &r); err != nil {
		return err
	}
	l.Kick()
	return nil
}

// Kick asks the running sealer (RunSealer) to seal now. It never blocks.
func (l *Log) Kick() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// sealGap is the least time between two runs of the sealer, so that under load each run seals
// a batch rather than one event per kick.
const sealGap = 100 * time.Millisecond

// RunSealer seals every interval and whenever kicked, until ctx ends. Several replicas may run
// one each: they take turns under an advisory lock.
func (l *Log) RunSealer(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-l.kick:
		}
		if _, err := l.Seal(ctx); err != nil && ctx.Err() == nil {
			l.logger.ErrorContext(ctx, "audit seal failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(sealGap):
		}
	}
}

// sealBatch is the most events sealed in one transaction.
const sealBatch = 1000

// Seal gives every sealable event its place in the chain and returns how many it sealed. On
// PostgreSQL an event is sealable once every transaction older than its own has ended; an
// event of a transaction still open waits, and so do the events after it.
func (l *Log) Seal(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := l.sealOnce(ctx)
		total += n
		if err != nil {
			return total, fmt.Errorf("audit seal: %w", err)
		}
		if n < sealBatch {
			return total, nil
		}
	}
}

// SealCommitted seals until no committed event is left unsealed, or ctx ends. On PostgreSQL
// an event waits for every older transaction of the whole cluster (pg_snapshot_xmin counts
// other databases' too), so one Seal may seal nothing while a long transaction runs anywhere;
// SealCommitted waits it out, polling. For a flush before an export or a backup, and for
// tests sharing a cluster; under a steady stream of new events it returns when it catches up.
func (l *Log) SealCommitted(ctx context.Context) (int, error) {
	total, wait := 0, 10*time.Millisecond
	gaveUp := func(err error) error {
		if ctx.Err() != nil { // ended mid-round: what is left is not known, only that it may be
			return fmt.Errorf("audit seal: events may be left unsealed: %w", err)
		}
		return err
	}
	for {
		n, err := l.Seal(ctx)
		total += n
		if err != nil {
			return total, gaveUp(err)
		}
		lag, err := l.Lag(ctx, 1)
		if err != nil {
			return total, gaveUp(err)
		}
		if lag.Unsealed == 0 {
			return total, nil
		}
		select {
		case <-ctx.Done():
			return total, fmt.Errorf("audit seal: %d or more events left unsealed: %w", lag.Unsealed, ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// chainHead is the hash chain's head, and where the sealer reads next: past the head's event,
// by commit order (on PostgreSQL its transaction id, xid, then id; on SQLite its id).
type chainHead struct {
	seq    int64
	prev   []byte // the head's hash (genesis for an empty chain)
	lastID int64  // the head's event
	xid    string // the head event's xid, as text; PostgreSQL only
}

// head reads the chain's head in one statement. An empty chain's head is seq 0 and the
// genesis hash, before every event.
func (l *Log) head(ctx context.Context, q store.Querier) (chainHead, error) {
	h := chainHead{prev: genesis[:], xid: "0"}
	dest := []any{&h.seq, &h.prev, &h.lastID}
	if l.db.Dialect() == store.Postgres {
		dest = append(dest, &h.xid)
	}
	err := q.QueryRow(ctx, l.q.head).Scan(dest...)
	switch {
	case errors.Is(err, store.ErrNoRows):
		return chainHead{prev: genesis[:], xid: "0"}, nil
	case err != nil:
		return chainHead{}, err
	case h.xid == "":
		return chainHead{}, fmt.Errorf("the last sealed event (seq %d) is missing: run cobranca audit verify", h.seq)
	}
	return h, nil
}

// after is the arguments that place a read of the events past h (candidates, unsealed),
// then the read's limit.
func (l *Log) after(h chainHead, limit int64) []any {
	if l.db.Dialect() == store.Postgres {
		return []any{h.xid, h.lastID, limit}
	}
	return []any{h.lastID, limit}
}

func (l *Log) sealOnce(ctx context.Context) (int, error) {
	n := 0
	err := l.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		n = 0
		if l.q.sealLock != "" {
			if _, err := tx.Exec(ctx, l.q.sealLock, sealLockID); err != nil {
				return err
			}
		}
		c, err := l.head(ctx, tx)
		if err != nil {
			return err
		}
		seq, prev := c.seq, c.prev
		rows, err := tx.Query(ctx, l.q.candidates, l.after(c, sealBatch)...)
		if err != nil {
			return err
		}
		type seal struct {
			id, seq    int64
			prev, hash []byte
		}
		var batch []seal
		for rows.Next() {
			var id int64
			var ev Event
			if err := scanEvent(rows, &id, &ev); err != nil {
				rows.Close()
				return err
			}
			seq++
			h := chainHash(seq, &ev, prev)
			batch = append(batch, seal{id: id, seq: seq, prev: prev, hash: h[:]})
			prev = h[:]
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			return nil
		}
		if tx.Dialect() == store.Postgres {
			// One statement for the batch: the sealer must outpace every writer together.
			seqs, ids, algs := make([]int64, len(batch)), make([]int64, len(batch)), make([]int16, len(batch))
			prevs, hashes := make([][]byte, len(batch)), make([][]byte, len(batch))
			for i, s := range batch {
				seqs[i], ids[i], algs[i], prevs[i], hashes[i] = s.seq, s.id, hashAlg, s.prev, s.hash
			}
			if _, err := tx.Exec(ctx, insertSealsPG, seqs, ids, algs, prevs, hashes); err != nil {
				return err
			}
		} else {
			for _, s := range batch {
				if _, err := tx.Exec(ctx, insertSeal, s.seq, s.id, int64(hashAlg), s.prev, s.hash); err != nil {
					return err
				}
			}
		}
		n = len(batch)
		return nil
	})
	return n, err
}

// scanEvent scans the content columns of the candidates and events queries: a leading id or
// seq, then the time and the fields.
func scanEvent(r store.Row, lead *int64, ev *Event) error {
	var timeUS, durUS, serverUS int64
	var outcome, details string
	err := r.Scan(lead, &timeUS, &ev.Name, &ev.Tool, &ev.Risk, &ev.Subject, &ev.Actor, &ev.ClientID,
		&ev.ACR, &ev.RequestID, &outcome, &ev.FailureCode, &ev.ArgsDigest, &ev.ResultDigest, &durUS, &serverUS, &details)
	if err != nil {
		return err
	}
	setTimes(ev, timeUS, durUS, serverUS)
	ev.Outcome = Outcome(outcome)
	ev.Details, err = parseDetails(details)
	return err
}

// setTimes sets the event's times from their stored microseconds; a server time of 0 is an
// event written before MACs, which has none.
func setTimes(ev *Event, timeUS, durUS, serverUS int64) {
	ev.Time = time.UnixMicro(timeUS).UTC()
	ev.Duration = time.Duration(durUS) * time.Microsecond
	ev.ServerTime = time.Time{}
	if serverUS != 0 {
		ev.ServerTime = time.UnixMicro(serverUS).UTC()
	}
}

// Events returns up to limit sealed events with a sequence number above after, in order.
func (l *Log) Events(ctx context.Context, after int64, limit int) ([]Event, error) {
	rows, err := l.db.Query(ctx, l.q.events, after, int64(limit))
	if err != nil {
		return nil, fmt.Errorf("audit events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var ev Event
		if err := scanEvent(rows, &ev.Seq, &ev); err != nil {
			return nil, fmt.Errorf("audit events: %w", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("audit events: %w", err)
	}
	return out, nil
}
