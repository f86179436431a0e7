// Package idempotency keeps the idempotency keys of tool calls with side effects, the spent
// nonces of sealed request states (migration 00030) and the dry runs that calls of tools with
// a mandatory dry run cite (00130, dryrun.go), in the store, shared by every replica.
//
// A call that carries a key reserves it with Begin inside the transaction of its effect and
// stores its answer with Complete in the same transaction: the effect, its audit event and the
// answer a retry gets back commit together, or none of them does and the key is free again.
// A retry with the same arguments (the same fingerprint) gets the stored answer byte for byte
// and causes no new effect; other arguments are a conflict; a duplicate while the first call
// still runs is told so at once. Keys expire after a TTL (COBRANCA_IDEMPOTENCY_TTL); Reap and
// RunReaper delete expired keys, nonces and dry runs.
package idempotency

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/ticker"
	"github.com/cobranca/cobranca/internal/value"
)

// Key names one reservation: a key is unique per principal and tool.
type Key struct{ Principal, Tool, Key string }

// State is what Begin found.
type State int

const (
	// Fresh: no live reservation; the caller runs the call and then Completes the key in the
	// same transaction.
	Fresh State = iota
	// Replay: the key was completed with the same fingerprint; Reservation.Response is the
	// stored answer, to be returned as it is, with no new effect.
	Replay
	// Conflict: the key was completed with another fingerprint (other arguments).
	Conflict
	// InProgress: another transaction holds the key right now (PostgreSQL only).
	InProgress
)

func (s State) String() string {
	switch s {
	case Fresh:
		return "fresh"
	case Replay:
		return "replay"
	case Conflict:
		return "conflict"
	case InProgress:
		return "in progress"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Reservation is Begin's answer.
type Reservation struct {
	State    State
	Response []byte // the stored answer, for Replay only
}

// Sizes the store holds to (the migration checks them too).
const (
	FingerprintLen = sha256.Size // a SHA-256 digest of the canonical arguments
	NonceLen       = 16          // internal/reqstate's nonce
)

// ErrSpent is SpendNonce's answer for a nonce spent before.
var ErrSpent = errors.New("idempotency: request state already used")

// ValidKey returns nil for an acceptable idempotency key: 1 to 255 characters, none of them a
// control, format, bidirectional or invisible character, and at least one visible (the rule
// of every id, value.TextProblem). Otherwise a *failure.Error invalid_arguments naming the
// field (contract.ArgIdempotencyKey); its message never holds the key.
func ValidKey(k string) error {
	if msg := value.TextProblem(k); msg != "" {
		return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: msg}
	}
	return nil
}

// Store keeps idempotency keys and spent nonces in one dialect's tables. It holds no
// connection: every method takes the transaction or handle to work in.
type Store struct {
	dialect store.Dialect
	ttl     time.Duration
	now     func() time.Time
}

// New returns a Store for dialect's tables whose keys live ttl after they are completed, on
// the clock now (time.Now when nil).
func New(dialect store.Dialect, ttl time.Duration, now func() time.Time) (*Store, error) {
	if dialect != store.Postgres && dialect != store.SQLite {
		return nil, fmt.Errorf("idempotency: unknown dialect %q", dialect)
	}
	if ttl <= 0 {
		return nil, fmt.Errorf("idempotency: TTL must be positive, got %v", ttl)
	}
	if now == nil {
		now = time.Now
	}
	return &Store{dialect: dialect, ttl: ttl, now: now}, nil
}

const (
	// lockPG and readPG are Begin's two statements on PostgreSQL, sent in one round trip
	// (store.Tx.QueryRows): the read is a statement of its own, after the lock, so that its
	// snapshot is taken once the lock is held. It selects one row whether or not the key has
	// one (NULLs when not).
	lockPG = `SELECT pg_try_advisory_xact_lock($1)`
	readPG = `SELECT k.fingerprint, k.response, k.expires_at FROM (VALUES (1)) AS one
LEFT JOIN idempotency_key k ON k.principal = $1 AND k.tool = $2 AND k.key = $3`
	selectKey = `SELECT fingerprint, response, expires_at FROM idempotency_key
WHERE principal = $1 AND tool = $2 AND key = $3`
	deleteKey = `DELETE FROM idempotency_key WHERE principal = $1 AND tool = $2 AND key = $3`
	insertKey = `INSERT INTO idempotency_key (principal, tool, key, fingerprint, response, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	// A spent nonce conflicts and inserts nothing: a unique violation would abort the
	// caller's PostgreSQL transaction. A concurrent spender waits for the first one's commit
	// (then finds the nonce spent) or rollback (then spends it).
	insertNonce = `INSERT INTO request_state_nonce (nonce, expires_at) VALUES ($1, $2) ON CONFLICT (nonce) DO NOTHING`
	reapKeys    = `DELETE FROM idempotency_key WHERE expires_at <= $1`
	reapNonces  = `DELETE FROM request_state_nonce WHERE expires_at <= $1`
)

// Begin reserves k inside tx, the transaction of the call's effect, and says what the caller
// must do (see State). fingerprint is the SHA-256 digest of the call's canonical arguments,
// the key excluded. Nothing is committed by Begin: if tx rolls back, the key is as it was.
//
// On PostgreSQL Begin takes a transaction-scoped advisory lock on a 64-bit hash of k; when
// another transaction holds it, the answer is InProgress without waiting. Once it is held, a
// row committed by an earlier holder is visible: a holder releases the lock only after its
// commit is visible, and the read that follows the lock is a statement of its own, with a
// snapshot of its own (both statements in one round trip, store.Tx.QueryRows; a single
// statement would read with a snapshot taken before the lock was granted). On SQLite
// every write transaction holds the database's write lock from its start (store.DB.InTx is
// BEGIN IMMEDIATE), so no other call can hold the key at the same time and InProgress never
// happens there: a duplicate waits for the first call's commit and then replays it.
//
// An expired row counts as absent and is deleted in tx.
func (s *Store) Begin(ctx context.Context, tx store.Tx, k Key, fingerprint []byte) (Reservation, error) {
	if err := s.check(tx, k, fingerprint); err != nil {
		return Reservation{}, err
	}
	var fp, response []byte
	var expires *int64 // nil: no row
	if s.dialect == store.Postgres {
		var locked bool
		err := tx.QueryRows(ctx, []store.Stmt{{SQL: lockPG, Args: []any{lockID(k)}}, {SQL: readPG, Args: []any{k.Principal, k.Tool, k.Key}}},
			[][]any{{&locked}, {&fp, &response, &expires}})
		if err != nil {
			return Reservation{}, fmt.Errorf("idempotency: begin: %w", err)
		}
		if !locked {
			return Reservation{State: InProgress}, nil
		}
	} else {
		err := tx.QueryRow(ctx, selectKey, k.Principal, k.Tool, k.Key).Scan(&fp, &response, &expires)
		if err != nil && !errors.Is(err, store.ErrNoRows) {
			return Reservation{}, fmt.Errorf("idempotency: begin: %w", err)
		}
	}
	if expires == nil {
		return Reservation{State: Fresh}, nil
	}
	if *expires <= s.now().UnixMicro() {
		if _, err := tx.Exec(ctx, deleteKey, k.Principal, k.Tool, k.Key); err != nil {
			return Reservation{}, fmt.Errorf("idempotency: delete expired key: %w", err)
		}
		return Reservation{State: Fresh}, nil
	}
	if subtle.ConstantTimeCompare(fp, fingerprint) != 1 {
		return Reservation{State: Conflict}, nil
	}
	return Reservation{State: Replay, Response: response}, nil
}

// Complete stores response as the answer to k inside tx, after a Fresh Begin in the same
// transaction; the key lives the Store's TTL from now.
func (s *Store) Complete(ctx context.Context, tx store.Tx, k Key, fingerprint, response []byte) error {
	st, err := s.CompleteStmt(tx, k, fingerprint, response)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, st.SQL, st.Args...); err != nil {
		return fmt.Errorf("idempotency: store response: %w", err)
	}
	return nil
}

// CompleteStmt is the statement Complete runs in tx, for tx to run it when it chooses
// (store.Tx.Defer): the key's lifetime counts from now, not from when it runs.
func (s *Store) CompleteStmt(tx store.Tx, k Key, fingerprint, response []byte) (store.Stmt, error) {
	if err := s.check(tx, k, fingerprint); err != nil {
		return store.Stmt{}, err
	}
	if response == nil {
		response = []byte{} // NOT NULL: an empty answer is still an answer
	}
	now := s.now()
	return store.Stmt{SQL: insertKey, Args: []any{k.Principal, k.Tool, k.Key, fingerprint, response,
		now.UnixMicro(), now.Add(s.ttl).UnixMicro()}}, nil
}

// check refuses what the store could never hold, before any SQL.
func (s *Store) check(tx store.Tx, k Key, fingerprint []byte) error {
	if d := tx.Dialect(); d != s.dialect {
		return fmt.Errorf("idempotency: a %s transaction given to a %s store", d, s.dialect)
	}
	if k.Principal == "" || k.Tool == "" {
		return errors.New("idempotency: key without a principal or tool")
	}
	if err := ValidKey(k.Key); err != nil {
		return err
	}
	if len(fingerprint) != FingerprintLen {
		return fmt.Errorf("idempotency: fingerprint of %d bytes, want %d", len(fingerprint), FingerprintLen)
	}
	return nil
}

// lockID is the advisory lock of k: the first 8 bytes of SHA-256 over its three parts, each
// length-prefixed so that no two keys share an encoding. Two keys that collide only make one
// wait for the other's answer (InProgress) while both are in flight.
func lockID(k Key) int64 {
	h := sha256.New()
	var n [8]byte
	for _, part := range [...]string{k.Principal, k.Tool, k.Key} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	var sum [sha256.Size]byte
	return int64(binary.BigEndian.Uint64(h.Sum(sum[:0])))
}

// SpendNonce records nonce, a request state's single-use nonce, as spent inside tx, the
// transaction of the call the state lets through: ErrSpent if it was spent before. If tx rolls
// back, the nonce is unspent again. expires is the state's expiry; the row is kept until then,
// past which the state itself is refused.
func (s *Store) SpendNonce(ctx context.Context, tx store.Tx, nonce []byte, expires time.Time) error {
	if len(nonce) != NonceLen {
		return fmt.Errorf("idempotency: nonce of %d bytes, want %d", len(nonce), NonceLen)
	}
	n, err := tx.Exec(ctx, insertNonce, nonce, expires.UnixMicro())
	if err != nil {
		return fmt.Errorf("idempotency: spend nonce: %w", err)
	}
	if n == 0 {
		return ErrSpent
	}
	return nil
}

// Reap deletes the expired keys, nonces and dry runs and returns how many rows it deleted.
func (s *Store) Reap(ctx context.Context, db store.Querier) (int64, error) {
	now := s.now().UnixMicro()
	keys, err := db.Exec(ctx, reapKeys, now)
	if err != nil {
		return 0, fmt.Errorf("idempotency: reap keys: %w", err)
	}
	nonces, err := db.Exec(ctx, reapNonces, now)
	if err != nil {
		return keys, fmt.Errorf("idempotency: reap nonces: %w", err)
	}
	dry, err := db.Exec(ctx, reapDryRuns, now)
	if err != nil {
		return keys + nonces, fmt.Errorf("idempotency: reap dry runs: %w", err)
	}
	return keys + nonces + dry, nil
}

// Stored returns how many idempotency keys the store holds (each with its stored answer;
// expired ones the reaper has not deleted yet included), counting at most limit
// rows, so that a scrape of the operator metrics costs at most that however large the table.
func Stored(ctx context.Context, q store.Querier, limit int64) (int64, error) {
	var n int64
	if err := q.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM idempotency_key LIMIT $1) k`, limit).Scan(&n); err != nil {
		return 0, fmt.Errorf("idempotency: count keys: %w", err)
	}
	return n, nil
}

// RunReaper reaps every interval until ctx is done, and returns promptly then. A failed run
// is logged on logger (its error only: never a key) and retried at the next tick.
func (s *Store) RunReaper(ctx context.Context, db store.Querier, interval time.Duration, logger *slog.Logger) {
	ticker.Run(ctx, interval, func(ctx context.Context) {
		if _, err := s.Reap(ctx, db); err != nil && ctx.Err() == nil {
			logger.ErrorContext(ctx, "idempotency reap failed", "err", err)
		}
	})
}
