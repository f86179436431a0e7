package auditlog

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cobranca/cobranca/internal/safefile"
)

// The spool keeps the audit events of low-tier calls answered while the store is down, in a
// file of the data directory, until RunSpool appends them to the store in the order they
// happened. Each replica has its own.
//
// The file is a sequence of records, each an 8-byte header — the payload's length and its
// CRC-32C, both big-endian uint32 — and the payload, a spoolEntry as JSON. Every append is
// fsynced before the call it records is answered. A crash can only tear the last record:
// OpenSpool drops a record that is cut short or fails its checksum, and what follows it,
// with a log line.
//
// The spool is bounded (SpoolOptions.MaxBytes). When an event does not fit, it is lost and
// counted; the count and the first and last lost times become one gap event in the chain
// (LostEvent), in the place the lost events would have had. Losses are written to the file as
// small "lost" records at most once a second while they go on, beyond the bound (about 150
// bytes each), and before each drain and at Close.

// DefaultSpoolMaxBytes bounds the spool file when SpoolOptions.MaxBytes is 0: about 100 000
// events.
const DefaultSpoolMaxBytes = 64 << 20

// MinSpoolMaxBytes is the smallest bound accepted.
const MinSpoolMaxBytes = 64 << 10

// SpoolFileName is the spool's file in the data directory.
const SpoolFileName = "audit-spool"

// LostEvent is the name of the gap event: its details say how many events the full spool lost
// (lostCount) and the server times of the first and last (firstLostUnixMicros,
// lastLostUnixMicros).
const LostEvent = "audit.events.lost"

// ErrSpoolFull is returned for an event the spool had no room for; it is counted in the next
// gap event.
var ErrSpoolFull = errors.New("audit spool full: event lost (counted in a gap event)")

const (
	spoolHeaderLen = 8
	maxSpoolRecord = 1 << 20 // larger lengths are damage: events are a few KiB at most
	spoolBatch     = 256     // records appended to the store per transaction
	lostFlushEvery = time.Second
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// spoolEntry is one record of the spool: an event with its nonce and MAC, or a run of losses.
type spoolEntry struct {
	Event *Event   `json:"event,omitempty"`
	Nonce []byte   `json:"nonce,omitempty"`
	MAC   []byte   `json:"mac,omitempty"`
	KeyID string   `json:"keyId,omitempty"` // absent in a record spooled before key ids
	Lost  *lostRun `json:"lost,omitempty"`
}

// lostRun counts events lost between two server times (Unix microseconds). Its nonce, drawn
// when it is first written, becomes the gap event's, so a gap appended twice (a crash between
// the store's commit and the spool's truncation) is written once.
type lostRun struct {
	Count int64  `json:"count"`
	First int64  `json:"first"`
	Last  int64  `json:"last"`
	Nonce []byte `json:"nonce,omitempty"`
}

func (r *lostRun) add(o lostRun) {
	if r.Count == 0 {
		*r = o
		return
	}
	r.Count += o.Count
	r.First, r.Last = min(r.First, o.First), max(r.Last, o.Last)
}

// SpoolOptions configure a Spool.
type SpoolOptions struct {
	// MaxBytes bounds the event records in the file (default DefaultSpoolMaxBytes; at least
	// MinSpoolMaxBytes).
	MaxBytes int64
	Logger   *slog.Logger
	// Now is the clock of losses (default time.Now).
	Now func() time.Time
}

// Spool is a bounded, durable queue of audit events in one file. Make it with OpenSpool, give
// it to New in Options.Spool, run Log.RunSpool, and Close it after RunSpool has returned.
type Spool struct {
	path   string
	max    int64
	logger *slog.Logger
	now    func() time.Time
	wake   chan struct{}
	unlock func()

	drainMu sync.Mutex // one drain at a time

	// syncMu is held around an fsync of appended records and around whatever replaces or
	// closes the file; taken before mu, never after.
	syncMu sync.Mutex
	synced int64 // the file is fsynced up to this size

	mu        sync.Mutex
	f         *os.File
	size      int64   // bytes of whole records in the file
	lost      lostRun // losses not yet in the file
	full      bool    // losing events until the next drain
	lostFlush time.Time
	n         atomic.Int64 // records in the file
	setAside  atomic.Int64 // events written to the dead-letter file since OpenSpool
}

// OpenSpool opens the spool file at path, creating it (0600), and takes an exclusive lock on
// it: one process per spool. A record torn by a crash is dropped with a log line; the records
// before it are kept.
func OpenSpool(path string, opts SpoolOptions) (*Spool, error) {
	if opts.MaxBytes == 0 {
		opts.MaxBytes = DefaultSpoolMaxBytes
	}
	if opts.MaxBytes < MinSpoolMaxBytes {
		return nil, fmt.Errorf("audit spool: bound %d bytes is below the least, %d", opts.MaxBytes, MinSpoolMaxBytes)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// A symbolic link, or a file another user planted, must not be truncated or made ours.
	f, err := safefile.Open(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit spool: %w", err)
	}
	unlock, err := lockSpool(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("audit spool %s: %w", path, err)
	}
	s := &Spool{path: path, max: opts.MaxBytes, logger: opts.Logger, now: opts.Now, f: f, unlock: unlock,
		wake: make(chan struct{}, 1)}
	if err := s.recover(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// recover makes the file 0600, counts its records and cuts it after the last whole one.
func (s *Spool) recover() error {
	if err := s.f.Chmod(0o600); err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	st, err := s.f.Stat()
	if err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	var off, n int64
	for off < st.Size() {
		_, size, err := readEntry(s.f, off)
		if err != nil {
			s.logger.Warn("audit spool: torn or damaged record dropped, with what follows it",
				"file", s.path, "offset", off, "bytes", st.Size()-off, "err", err)
			if err := s.f.Truncate(off); err != nil {
				return fmt.Errorf("audit spool: %w", err)
			}
			if err := s.f.Sync(); err != nil {
				return fmt.Errorf("audit spool: %w", err)
			}
			break
		}
		off += size
		n++
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	s.size, s.synced = off, off
	s.n.Store(n)
	return nil
}

// readEntry reads the record at off and returns it and its size on disk.
func readEntry(r io.ReaderAt, off int64) (spoolEntry, int64, error) {
	var h [spoolHeaderLen]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		return spoolEntry{}, 0, fmt.Errorf("header: %w", err)
	}
	n, sum := binary.BigEndian.Uint32(h[:4]), binary.BigEndian.Uint32(h[4:])
	if n == 0 || n > maxSpoolRecord {
		return spoolEntry{}, 0, fmt.Errorf("record length %d", n)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off+spoolHeaderLen); err != nil {
		return spoolEntry{}, 0, fmt.Errorf("record: %w", err)
	}
	if crc32.Checksum(b, castagnoli) != sum {
		return spoolEntry{}, 0, errors.New("checksum mismatch")
	}
	var e spoolEntry
	if err := json.Unmarshal(b, &e); err != nil || (e.Event == nil) == (e.Lost == nil) {
		return spoolEntry{}, 0, fmt.Errorf("record content: %v", err)
	}
	return e, spoolHeaderLen + int64(n), nil
}

func encodeEntry(e spoolEntry) ([]byte, error) {
	p, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	b := make([]byte, spoolHeaderLen, spoolHeaderLen+len(p))
	binary.BigEndian.PutUint32(b[:4], uint32(len(p)))
	binary.BigEndian.PutUint32(b[4:], crc32.Checksum(p, castagnoli))
	return append(b, p...), nil
}

// Len is the number of records waiting in the spool.
func (s *Spool) Len() int { return int(s.n.Load()) }

// SetAside is the number of spooled events the store refused and the drain wrote to the
// dead-letter file since OpenSpool.
func (s *Spool) SetAside() int64 { return s.setAside.Load() }

// add appends r and returns once it is fsynced, or counts it lost when it does not fit.
func (s *Spool) add(r *record) error {
	b, err := encodeEntry(spoolEntry{Event: &r.ev, Nonce: r.nonce, MAC: r.mac, KeyID: r.keyID})
	if err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	end, err := s.write(r, b)
	if err != nil {
		return err
	}
	s.signal()
	return s.syncTo(end)
}

// write appends b, the encoding of r, unless the spool is full, and returns where it ends.
func (s *Spool) write(r *record, b []byte) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return 0, errors.New("audit spool: closed")
	}
	if s.full || s.size+int64(len(b)) > s.max {
		// Once one event is lost, the next ones are too until a drain makes room: a gap is
		// one run, never interleaved with kept events.
		s.full = true
		us := r.ev.ServerTime.UnixMicro()
		s.lost.add(lostRun{Count: 1, First: us, Last: us})
		if s.now().Sub(s.lostFlush) >= lostFlushEvery {
			if err := s.flushLostLocked(); err != nil {
				s.logger.Error("audit spool: writing the count of lost events failed", "err", err)
			}
		}
		return 0, ErrSpoolFull
	}
	if err := s.appendLocked(b, false); err != nil {
		return 0, err
	}
	return s.size, nil
}

// syncTo returns once the file is fsynced up to end. One fsync covers every record appended
// before it began, so concurrent adds share it (group commit) instead of queueing one each.
func (s *Spool) syncTo(end int64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.synced >= end {
		return nil
	}
	s.mu.Lock()
	f, size := s.f, s.size
	s.mu.Unlock()
	if f == nil {
		return errors.New("audit spool: closed")
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	s.synced = size
	return nil
}

// appendLocked appends a record, fsynced at once when sync is set (else see syncTo).
func (s *Spool) appendLocked(b []byte, sync bool) error {
	if _, err := s.f.Write(b); err != nil {
		_ = s.f.Truncate(s.size)
		return fmt.Errorf("audit spool: %w", err)
	}
	if sync {
		if err := s.f.Sync(); err != nil {
			_ = s.f.Truncate(s.size)
			return fmt.Errorf("audit spool: %w", err)
		}
	}
	s.size += int64(len(b))
	s.n.Add(1)
	return nil
}

// flushLostLocked writes the losses counted in memory as a lost record.
func (s *Spool) flushLostLocked() error {
	s.lostFlush = s.now()
	if s.lost.Count == 0 {
		return nil
	}
	run := s.lost
	run.Nonce = make([]byte, nonceLen)
	rand.Read(run.Nonce)
	b, err := encodeEntry(spoolEntry{Lost: &run})
	if err != nil {
		return err
	}
	if err := s.appendLocked(b, true); err != nil {
		return err
	}
	s.lost = lostRun{}
	return nil
}

func (s *Spool) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Close writes the losses still counted in memory and closes the file. Call it after
// RunSpool has returned.
func (s *Spool) Close() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := s.flushLostLocked()
	s.unlock()
	err = errors.Join(err, s.f.Close())
	s.f = nil
	return err
}

// batch reads up to spoolBatch records from the start of the file, never splitting a run of
// lost records, and returns them with the bytes they take. Losses counted in memory are
// written first, so they take their place after the events spooled before them.
func (s *Spool) batch() ([]spoolEntry, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil, 0, errors.New("audit spool: closed")
	}
	if err := s.flushLostLocked(); err != nil {
		return nil, 0, err
	}
	var out []spoolEntry
	var off int64
	for off < s.size {
		e, n, err := readEntry(s.f, off)
		if err != nil {
			return nil, 0, fmt.Errorf("audit spool: record at offset %d: %w", off, err)
		}
		if len(out) >= spoolBatch && (e.Lost == nil || out[len(out)-1].Lost == nil) {
			break
		}
		out = append(out, e)
		off += n
	}
	return out, off, nil
}

// consume removes the first n bytes (count records) of the file, appended to the store.
func (s *Spool) consume(n int64, count int) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if n == s.size {
		if err := s.f.Truncate(0); err != nil {
			return fmt.Errorf("audit spool: %w", err)
		}
		if err := s.f.Sync(); err != nil {
			return fmt.Errorf("audit spool: %w", err)
		}
	} else if err := s.rewriteLocked(n); err != nil {
		return err
	}
	s.size -= n
	s.synced = s.size // truncated and fsynced, or rewritten and fsynced
	s.n.Add(-int64(count))
	s.full = false
	return nil
}

// rewriteLocked replaces the file by its bytes from off on: written to a temporary file,
// fsynced and renamed over it, so a crash leaves either the old file or the new one.
func (s *Spool) rewriteLocked(off int64) error {
	rest := make([]byte, s.size-off)
	if _, err := s.f.ReadAt(rest, off); err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	tmp := s.path + ".tmp"
	// A left-over temporary file (a crash) is removed, never opened: O_EXCL then creates ours.
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("audit spool: %w", err)
	}
	f, err := safefile.Open(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("audit spool: %w", err)
	}
	if _, err = f.Write(rest); err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, s.path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("audit spool: %w", err)
	}
	unlock, err := lockSpool(f)
	if err != nil {
		f.Close()
		return fmt.Errorf("audit spool: %w", err)
	}
	syncDir(filepath.Dir(s.path))
	s.unlock()
	s.f.Close()
	s.f, s.unlock = f, unlock
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// Keep records ev like Record, except that when the store cannot take it and the Log has a
// spool, the event is kept in the spool and Keep returns nil: for events of calls answered
// whatever happens to their event (low-tier calls, refusals). While the spool holds events,
// new ones join it without trying the store, so that they reach the store in the order they
// happened. The error is ErrSpoolFull (wrapped) for an event lost to a full spool.
func (l *Log) Keep(ctx context.Context, ev Event) error {
	r, err := l.stamp(ev, l.now())
	if err != nil {
		return err
	}
	if l.spool == nil {
		return l.record(ctx, r)
	}
	if l.spool.Len() == 0 {
		err := l.record(ctx, r)
		if err == nil {
			return nil
		}
		l.logger.WarnContext(ctx, "audit store unavailable: event kept in the spool", "request_id", r.ev.RequestID, "event", r.ev.Name, "err", err)
	}
	if err := l.spool.add(&r); err != nil {
		return fmt.Errorf("audit append: the store is unavailable and %w", err)
	}
	return nil
}

// RunSpool appends the spooled events to the store, in order, whenever some are waiting:
// at once when it starts (a spool left by a previous run), when Keep spools one, and every
// interval while the store stays down. When ctx ends it makes a last attempt, bounded by
// drainTimeout, and returns; then Close the spool. Run it only when the Log has a spool.
func (l *Log) RunSpool(ctx context.Context, interval time.Duration) {
	s := l.spool
	t := time.NewTicker(interval)
	defer t.Stop()
	down := false
	for {
		if s.Len() > 0 || s.hasLost() {
			n, err := l.drainSpool(ctx)
			switch {
			case err != nil && ctx.Err() == nil && !down:
				down = true
				l.logger.Warn("audit spool: the store is still unavailable; retrying", "waiting", s.Len(), "err", err)
			case err == nil:
				if down || n > 0 {
					l.logger.Info("audit spool: events appended to the store", "events", n)
				}
				down = false
			}
		}
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
			if _, err := l.drainSpool(dctx); err != nil {
				l.logger.Warn("audit spool: events left for the next start", "waiting", s.Len(), "err", err)
			}
			cancel()
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

func (s *Spool) hasLost() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lost.Count > 0
}

// drainSpool appends every spooled record to the store, a batch per transaction, and returns
// how many events it appended.
func (l *Log) drainSpool(ctx context.Context) (int, error) {
	s := l.spool
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	total := 0
	for {
		entries, size, err := s.batch()
		if err != nil || len(entries) == 0 {
			return total, err
		}
		recs, err := l.spooledRecords(entries)
		if err != nil {
			return total, err
		}
		// Each batch is bounded by drainTimeout, unless the caller bounded the whole drain
		// itself (RunSpool's last attempt at shutdown, a test on a loaded machine).
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if _, ok := ctx.Deadline(); !ok {
			wctx, cancel = context.WithTimeout(ctx, drainTimeout)
		}
		// One record the store will never take must not hold back every later one: such a
		// batch goes one by one, and what is refused is set aside.
		if anyUnstorable(recs) {
			err = l.insertEach(wctx, recs)
		} else if err = l.insertRecords(wctx, recs, true); err != nil && refusedByStore(err) {
			err = l.insertEach(wctx, recs)
		}
		cancel()
		if err != nil {
			return total, fmt.Errorf("audit spool: %w", err)
		}
		if err := s.consume(size, len(entries)); err != nil {
			return total, err
		}
		total += len(recs)
		l.Kick()
	}
}

// spooledRecords turns spool entries into records: events as they were spooled, each run of
// lost records into one gap event.
func (l *Log) spooledRecords(entries []spoolEntry) ([]record, error) {
	recs := make([]record, 0, len(entries))
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if e.Event != nil {
			recs = append(recs, record{ev: *e.Event, details: detailsJSON(e.Event.Details), nonce: e.Nonce, mac: e.MAC, keyID: e.KeyID})
			continue
		}
		run := *e.Lost
		for i+1 < len(entries) && entries[i+1].Lost != nil {
			i++
			nonce := run.Nonce
			run.add(*entries[i].Lost)
			run.Nonce = nonce
		}
		r, err := l.gapRecord(run)
		if err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// gapRecord is the gap event of a run of losses, with the run's nonce.
func (l *Log) gapRecord(run lostRun) (record, error) {
	nonce := run.Nonce
	if len(nonce) != nonceLen { // not written by this version: draw one
		nonce = make([]byte, nonceLen)
		rand.Read(nonce)
	}
	return l.stampNonce(Event{
		Name:        LostEvent,
		Outcome:     Failed,
		FailureCode: "audit_spool_full",
		Details: map[string]int64{
			"lostCount":           run.Count,
			"firstLostUnixMicros": run.First,
			"lastLostUnixMicros":  run.Last,
		},
	}, time.UnixMicro(run.Last), nonce)
}

// DeadLetterSuffix names the dead-letter file: the spool's path with this suffix. It holds,
// in the spool's record format, the spooled events the store refused for what they hold
// rather than for being unavailable; each left a gap event (RefusedCode) in the chain.
const DeadLetterSuffix = ".dead"

// RefusedCode is the failure code of the gap event (LostEvent, lostCount 1) left in the chain
// for a spooled event the store refused and that was set aside in the dead-letter file.
const RefusedCode = "audit_event_refused"

// refusedByStore reports whether err is the store refusing the data itself (PostgreSQL
// SQLSTATE classes 22, data exception, and 23, integrity constraint violation; SQLite's
// TOOBIG, CONSTRAINT and MISMATCH), which no retry can cure, rather than the store being
// unavailable.
func refusedByStore(err error) bool {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		c := pg.SQLState()
		return len(c) == 5 && (c[:2] == "22" || c[:2] == "23")
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		switch lite.Code() & 0xff {
		case 18, 19, 20: // SQLITE_TOOBIG, SQLITE_CONSTRAINT, SQLITE_MISMATCH
			return true
		}
	}
	return false
}

// anyUnstorable reports whether a record fails today's rules (a spool written by an older
// version may hold one).
func anyUnstorable(recs []record) bool {
	for i := range recs {
		if recs[i].ev.validate() != nil {
			return true
		}
	}
	return false
}

// insertEach appends recs one by one. A record the store refuses for its content is written
// to the dead-letter file and replaced in the chain by a gap event; any other error stops it
// (the records already appended are skipped by their nonces when the batch is tried again).
func (l *Log) insertEach(ctx context.Context, recs []record) error {
	for i := range recs {
		r := &recs[i]
		err := r.ev.validate()
		if err == nil {
			if err = l.insertRecords(ctx, recs[i:i+1], true); err == nil {
				continue
			}
			if !refusedByStore(err) || r.ev.Name == LostEvent {
				return err
			}
		}
		if derr := l.spool.deadLetter(r); derr != nil {
			return fmt.Errorf("setting aside an event the store refused (%v): %w", err, derr)
		}
		gap, gerr := l.refusedGap(r)
		if gerr != nil {
			return gerr
		}
		if gerr := l.insertRecords(ctx, []record{gap}, true); gerr != nil {
			return gerr
		}
		l.logger.Error("audit spool: the store refused an event; it is set aside in the dead-letter file and a gap event takes its place",
			"file", l.spool.path+DeadLetterSuffix, "request_id", r.ev.RequestID, "event", r.ev.Name, "err", err)
	}
	return nil
}

// refusedGap is the gap event of the refused record r. Its nonce is derived from r's, so that
// the gap is written once however often the batch is tried.
func (l *Log) refusedGap(r *record) (record, error) {
	h := sha256.Sum256(append([]byte("cobranca audit refused\x00"), r.nonce...))
	us := r.ev.ServerTime.UnixMicro()
	return l.stampNonce(Event{
		Name:        LostEvent,
		RequestID:   validOr(r.ev.RequestID),
		Outcome:     Failed,
		FailureCode: RefusedCode,
		Details:     map[string]int64{"lostCount": 1, "firstLostUnixMicros": us, "lastLostUnixMicros": us},
	}, r.ev.ServerTime, h[:nonceLen])
}

// validOr returns s when the store can keep it as a field, else "".
func validOr(s string) string {
	if checkField("", s, MaxFieldBytes) != nil {
		return ""
	}
	return s
}

// deadLetter appends r to the dead-letter file (0600, never through a symbolic link) and
// fsyncs it.
func (s *Spool) deadLetter(r *record) error {
	b, err := encodeEntry(spoolEntry{Event: &r.ev, Nonce: r.nonce, MAC: r.mac, KeyID: r.keyID})
	if err != nil {
		return err
	}
	f, err := safefile.Open(s.path+DeadLetterSuffix, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		return err
	}
	s.setAside.Add(1)
	return nil
}
