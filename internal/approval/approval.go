// Package approval keeps the pending actions of critical calls (migration 00070): the exact
// call an agent asked for, what it would do, who asked, and a person's decision on it.
//
// The pipeline records a pending action when a critical call arrives without an approval,
// and marks it executed in the transaction of the call's effect; a person approves or rejects
// it through a Decider: the CLI with the person's access token (Decide), the approval page
// with the signed-in person (DecideAs), the one check both run. An action lives until its expiry (COBRANCA_APPROVAL_TTL): past it, an action not yet
// executed reads as expired, whatever was decided.
package approval

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
)

// Prefix starts every approval id.
const Prefix = "a_"

// State is where an action stands.
type State string

// The states of an action.
const (
	Pending  State = "pending"
	Approved State = "approved"
	Rejected State = "rejected"
	Executed State = "executed"
	Expired  State = "expired"
)

// States are the states of an action, in the order they come.
func States() []State { return []State{Pending, Approved, Rejected, Executed, Expired} }

// Requester is who asked for the call: the token's subject, client and actor ("" for a
// person).
type Requester struct{ Subject, Client, Actor string }

// Approver is the person who decided, as their token says.
type Approver struct {
	Subject  string
	ACR      string
	AuthTime time.Time // zero when the token had none
}

// Action is one pending action, as stored.
type Action struct {
	ID          string
	Tool        string
	Digest      [sha256.Size]byte // the exact call: canonical arguments with the idempotency key
	Preview     string
	SideEffects []string
	Requester   Requester
	Created     time.Time
	Expires     time.Time
	State       State // as of the Store's clock: a live action past its expiry reads Expired
	Approver    *Approver
	Decided     time.Time
	ExecutedAt  time.Time
}

// ErrNotFound is the answer for an id no action has.
var ErrNotFound = errors.New("approval: no such approval")

// ErrDecided is Decide's answer for an action that is no longer pending (its State says what
// it became).
var ErrDecided = errors.New("approval: already decided or expired")

// Store keeps actions. It holds no connection: every method takes the handle to work in.
type Store struct {
	ttl     time.Duration
	now     func() time.Time
	created Hook
	decided Hook
}

// Hook is told of each pending action Create records, in the transaction that records it:
// what it enqueues exists exactly when the action does, and its error undoes the action
// (internal/notify queues the approvers' notification so).
type Hook func(ctx context.Context, tx store.Tx, a *Action) error

// OnCreate sets the hook Create calls. Set it before the Store is used: it is not guarded.
func (s *Store) OnCreate(h Hook) { s.created = h }

// OnDecide sets the hook Decide calls with each action it decides, in the transaction that
// decides it (internal/collections queues an approved schedule batch's send so). Set it before
// the Store is used: it is not guarded.
func (s *Store) OnDecide(h Hook) { s.decided = h }

// inTx is the handle that runs transactions: a store.DB.
type inTx interface {
	InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error
}

// New returns a Store whose actions live ttl, on the clock now (time.Now when nil).
func New(ttl time.Duration, now func() time.Time) (*Store, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("approval: TTL must be positive, got %v", ttl)
	}
	if now == nil {
		now = time.Now
	}
	return &Store{ttl: ttl, now: now}, nil
}

func micros(t time.Time) int64 { return t.UnixMicro() }

const columns = `id, tool, args_digest, preview, side_effects, requested_by, requested_client, requested_actor,
created_at, expires_at, state, COALESCE(approver, ''), COALESCE(approver_acr, ''), COALESCE(approver_auth_time, 0),
COALESCE(decided_at, 0), COALESCE(executed_at, 0)`

// Create records a pending action for the call, living the Store's TTL, and returns it. With
// a hook (OnCreate), q must be a transaction or a handle that runs them (a store.DB): the
// action and the hook's work commit together.
func (s *Store) Create(ctx context.Context, q store.Querier, tool string, digest [sha256.Size]byte, preview string, effects []string, r Requester) (*Action, error) {
	return s.CreateUntil(ctx, q, tool, digest, preview, effects, r, time.Time{})
}

// CreateUntil is Create for an action that lives until expires instead of the Store's TTL
// (zero: the TTL), for a call whose own deadline is known: a schedule's batch lives until its
// send window closes.
func (s *Store) CreateUntil(ctx context.Context, q store.Querier, tool string, digest [sha256.Size]byte, preview string, effects []string, r Requester, expires time.Time) (*Action, error) {
	if s.created == nil {
		return s.create(ctx, q, tool, digest, preview, effects, r, expires)
	}
	run := func(ctx context.Context, tx store.Tx) (*Action, error) {
		a, err := s.create(ctx, tx, tool, digest, preview, effects, r, expires)
		if err != nil {
			return nil, err
		}
		if err := s.created(ctx, tx, a); err != nil {
			return nil, fmt.Errorf("approval: create: %w", err)
		}
		return a, nil
	}
	switch q := q.(type) {
	case store.Tx:
		return run(ctx, q)
	case inTx:
		var a *Action
		err := q.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var err error
			a, err = run(ctx, tx)
			return err
		})
		return a, err
	}
	return nil, fmt.Errorf("approval: create: %T runs no transaction, and the hook needs one", q)
}

func (s *Store) create(ctx context.Context, q store.Querier, tool string, digest [sha256.Size]byte, preview string, effects []string, r Requester, expires time.Time) (*Action, error) {
	if effects == nil {
		effects = []string{}
	}
	fx, err := json.Marshal(effects)
	if err != nil {
		return nil, err
	}
	now := s.now()
	if expires.IsZero() {
		expires = now.Add(s.ttl)
	}
	if !expires.After(now) {
		return nil, fmt.Errorf("approval: create: it would expire at %s, not after now (%s)", expires.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	a := &Action{ID: ident.New(Prefix), Tool: tool, Digest: digest, Preview: preview, SideEffects: effects,
		Requester: r, Created: now, Expires: expires, State: Pending}
	_, err = q.Exec(ctx, `INSERT INTO approval (id, tool, args_digest, preview, side_effects, requested_by, requested_client,
requested_actor, created_at, expires_at, state) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'pending')`,
		a.ID, tool, digest[:], preview, string(fx), r.Subject, r.Client, r.Actor, micros(a.Created), micros(a.Expires))
	if err != nil {
		return nil, fmt.Errorf("approval: create: %w", err)
	}
	return a, nil
}

// Get returns the action id.
func (s *Store) Get(ctx context.Context, q store.Querier, id string) (*Action, error) {
	if !ident.Valid(Prefix, id) {
		return nil, ErrNotFound
	}
	return s.scan(q.QueryRow(ctx, `SELECT `+columns+` FROM approval WHERE id = $1`, id))
}

// Find returns the latest action of the requester's call (tool and digest), for a client that
// cannot name it (MCP 2025-11-25 has no request state); ErrNotFound when there is none.
func (s *Store) Find(ctx context.Context, q store.Querier, r Requester, tool string, digest [sha256.Size]byte) (*Action, error) {
	return s.scan(q.QueryRow(ctx, `SELECT `+columns+` FROM approval
WHERE requested_by = $1 AND requested_client = $2 AND requested_actor = $3 AND tool = $4 AND args_digest = $5
ORDER BY created_at DESC, id DESC LIMIT 1`, r.Subject, r.Client, r.Actor, tool, digest[:]))
}

// Pending returns how many actions wait for a person's decision now (pending, not expired),
// counting at most limit, and when the oldest of those was created (zero when none). It
// reads the index of live pending actions (migration 00160), so its cost is the number
// waiting, not the table's size: the operator metrics call it.
func (s *Store) Pending(ctx context.Context, q store.Querier, limit int64) (n int64, oldest time.Time, err error) {
	var oldestUS int64
	err = q.QueryRow(ctx, `SELECT count(*), COALESCE(min(created_at), 0) FROM (
SELECT created_at FROM approval WHERE state = 'pending' AND expires_at > $1 LIMIT $2) p`, micros(s.now()), limit).Scan(&n, &oldestUS)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("approval: pending: %w", err)
	}
	if n > 0 {
		oldest = time.UnixMicro(oldestUS)
	}
	return n, oldest, nil
}

// List returns the actions created at or after since, newest first, at most limit.
func (s *Store) List(ctx context.Context, q store.Querier, since time.Time, limit int) ([]*Action, error) {
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM approval WHERE created_at >= $1 ORDER BY created_at DESC, id DESC LIMIT $2`, micros(since), limit)
	if err != nil {
		return nil, fmt.Errorf("approval: list: %w", err)
	}
	return s.collect(rows)
}

// Decide approves (or rejects) the pending action id as ap, in tx. An action that is not
// pending — decided before, executed, or past its expiry — is left as it is: ErrDecided, with
// the action as it stands.
func (s *Store) Decide(ctx context.Context, tx store.Tx, id string, approve bool, ap Approver) (*Action, error) {
	state := Rejected
	if approve {
		state = Approved
	}
	now := s.now()
	var authTime any
	if !ap.AuthTime.IsZero() {
		authTime = micros(ap.AuthTime)
	}
	n, err := tx.Exec(ctx, `UPDATE approval SET state = $2, approver = $3, approver_acr = $4, approver_auth_time = $5, decided_at = $6
WHERE id = $1 AND state = 'pending' AND expires_at > $6`, id, string(state), ap.Subject, ap.ACR, authTime, micros(now))
	if err != nil {
		return nil, fmt.Errorf("approval: decide: %w", err)
	}
	a, err := s.Get(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return a, ErrDecided
	}
	if s.decided != nil {
		if err := s.decided(ctx, tx, a); err != nil {
			return nil, fmt.Errorf("approval: decide: %w", err)
		}
	}
	return a, nil
}

// MarkExecutedStmt is the statement that marks the approved action id executed, for the
// transaction of the call's effect; it affects no row unless the action is still approved
// and live (Executing checks that first, in the same transaction).
func (s *Store) MarkExecutedStmt(id string) store.Stmt {
	now := micros(s.now())
	return store.Stmt{SQL: `UPDATE approval SET state = 'executed', executed_at = $2 WHERE id = $1 AND state = 'approved' AND expires_at > $2`, Args: []any{id, now}}
}

// Executing locks the action id for the transaction tx about to run its call, and returns it
// as it stands: the call runs only when its State is Approved.
func (s *Store) Executing(ctx context.Context, tx store.Tx, id string) (*Action, error) {
	sql := `SELECT ` + columns + ` FROM approval WHERE id = $1`
	if tx.Dialect() == store.Postgres {
		sql += ` FOR UPDATE`
	}
	return s.scan(tx.QueryRow(ctx, sql, id))
}

func (s *Store) scan(row store.Row) (*Action, error) {
	var (
		a                           Action
		digest                      []byte
		fx, state, approver, acr    string
		created, expires            int64
		authTime, decided, executed int64
	)
	err := row.Scan(&a.ID, &a.Tool, &digest, &a.Preview, &fx, &a.Requester.Subject, &a.Requester.Client, &a.Requester.Actor,
		&created, &expires, &state, &approver, &acr, &authTime, &decided, &executed)
	if errors.Is(err, store.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("approval: read: %w", err)
	}
	if len(digest) != sha256.Size {
		return nil, fmt.Errorf("approval %s: digest of %d bytes", a.ID, len(digest))
	}
	copy(a.Digest[:], digest)
	if err := json.Unmarshal([]byte(fx), &a.SideEffects); err != nil {
		return nil, fmt.Errorf("approval %s: side effects: %w", a.ID, err)
	}
	a.Created, a.Expires, a.State = time.UnixMicro(created), time.UnixMicro(expires), State(state)
	if decided != 0 {
		a.Approver, a.Decided = &Approver{Subject: approver, ACR: acr}, time.UnixMicro(decided)
		if authTime != 0 {
			a.Approver.AuthTime = time.UnixMicro(authTime)
		}
	}
	if executed != 0 {
		a.ExecutedAt = time.UnixMicro(executed)
	}
	a.State = StateAt(a.State, a.Expires, s.now())
	return &a, nil
}

// StateAt is the state an action recorded as state, expiring at expires, reads at now: a live
// action (pending, or approved and not yet run) past its expiry reads Expired.
func StateAt(state State, expires, now time.Time) State {
	if (state == Pending || state == Approved) && !now.Before(expires) {
		return Expired
	}
	return state
}
