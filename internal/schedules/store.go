package schedules

// The store half: the schedules (migration 00230's schedule table) and the steps their
// batches took (schedule_step). Steps and the audience are stored as the JSON of their Spec
// form, which both dialects keep as text; the window as its written form; times as
// microseconds since the epoch.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
)

const columns = `id, name, steps, audience, cap_per_customer, cap_per_batch, window_zone, window_open, window_close,
 window_days, end_date, state, created_by, created_by_actor, created_at, paused_by, paused_by_actor, paused_at,
 resumed_by, resumed_by_actor, resumed_at, updated_at, revision`

// scan reads a row of columns.
func scan(row store.Row) (Schedule, error) {
	var (
		s                                  Schedule
		sp                                 Spec
		steps, audience, state, days       string
		created, paused, resumed, upd, rev int64
		w                                  WindowSpec
		caps                               Caps
		cpc, cpb                           int64
	)
	err := row.Scan(&s.ID, &sp.Name, &steps, &audience, &cpc, &cpb, &w.Zone, &w.Open, &w.Close,
		&days, &sp.EndDate, &state, &s.Created.By, &s.Created.Actor, &created, &s.Paused.By, &s.Paused.Actor, &paused,
		&s.Resumed.By, &s.Resumed.Actor, &resumed, &upd, &rev)
	if err != nil {
		return Schedule{}, err
	}
	if err := errors.Join(json.Unmarshal([]byte(steps), &sp.Steps), json.Unmarshal([]byte(audience), &sp.Audience)); err != nil {
		return Schedule{}, fmt.Errorf("schedule %s: %w", s.ID, err)
	}
	caps.PerCustomer7Days, caps.PerBatch = int(cpc), int(cpb)
	if days != "" {
		w.Days = strings.Split(days, ",")
	}
	sp.Caps, sp.Window = &caps, &w
	// The stored form is one Validate accepted: read back through it, so that a schedule is
	// only ever what the rules say one is.
	v, fe := sp.Validate(nil)
	if fe != nil {
		return Schedule{}, fmt.Errorf("schedule %s: stored %s: %s", s.ID, fe.Field, fe.Message)
	}
	v.ID, v.State, v.Created, v.Paused, v.Resumed = s.ID, State(state), s.Created, s.Paused, s.Resumed
	v.Created.At, v.Paused.At, v.Resumed.At = at(created), at(paused), at(resumed)
	v.Updated, v.Revision = micros(upd), rev
	return v, nil
}

func micros(us int64) time.Time { return time.UnixMicro(us).UTC() }

// at is a stamp's time: zero for 0 (never).
func at(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return micros(us)
}

// Create stores s (Validate's) as a new active schedule created by by at now, and returns it
// with its id.
func Create(ctx context.Context, tx store.Tx, s Schedule, by Stamp, now time.Time) (Schedule, error) {
	if by.By == "" {
		return Schedule{}, errors.New("schedules: create: no subject")
	}
	steps, err := json.Marshal(s.Steps)
	if err != nil {
		return Schedule{}, err
	}
	aud, err := json.Marshal(s.Audience)
	if err != nil {
		return Schedule{}, err
	}
	s.ID = ident.New(IDPrefix)
	us := now.UnixMicro()
	s.State, s.Created, s.Updated, s.Revision = Active, Stamp{By: by.By, Actor: by.Actor, At: micros(us)}, micros(us), 1
	_, err = tx.Exec(ctx, `INSERT INTO schedule (`+columns+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, '', '', 0, '', '', 0, $16, 1)`,
		s.ID, s.Name, string(steps), string(aud), int64(s.Caps.PerCustomer7Days), int64(s.Caps.PerBatch),
		s.Window.Zone.String(), clock(s.Window.Open), clock(s.Window.Close), strings.Join(s.Spec.Window.Days, ","),
		s.EndDate.String(), string(Active), by.By, by.Actor, us, us)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedules: create: %w", err)
	}
	return s, nil
}

// Get reads the schedule id; ErrNotFound when there is none.
func Get(ctx context.Context, q store.Querier, id string) (Schedule, error) {
	return get(ctx, q, `SELECT `+columns+` FROM schedule WHERE id = $1`, id)
}

// GetForUpdate reads the schedule id locked until tx ends (on SQLite the write transaction
// already holds the database).
func GetForUpdate(ctx context.Context, tx store.Tx, id string) (Schedule, error) {
	lock := ""
	if tx.Dialect() == store.Postgres {
		lock = " FOR UPDATE"
	}
	return get(ctx, tx, `SELECT `+columns+` FROM schedule WHERE id = $1`+lock, id)
}

func get(ctx context.Context, q store.Querier, sql, id string) (Schedule, error) {
	if !ValidID(id) {
		return Schedule{}, ErrNotFound
	}
	s, err := scan(q.QueryRow(ctx, sql, id))
	if errors.Is(err, store.ErrNoRows) {
		return Schedule{}, ErrNotFound
	}
	if err != nil {
		return Schedule{}, fmt.Errorf("schedules: get: %w", err)
	}
	return s, nil
}

// SetState moves the schedule s (read locked, GetForUpdate) to state, stamped by by at now:
// paused records who paused it, active who resumed it. Setting the state it has changes
// nothing and returns false.
func SetState(ctx context.Context, tx store.Tx, s Schedule, state State, by Stamp, now time.Time) (Schedule, bool, error) {
	if s.State == state {
		return s, false, nil
	}
	if by.By == "" {
		return s, false, errors.New("schedules: set state: no subject")
	}
	us := now.UnixMicro()
	stamp := Stamp{By: by.By, Actor: by.Actor, At: micros(us)}
	sql := `UPDATE schedule SET state = $1, paused_by = $2, paused_by_actor = $3, paused_at = $4, updated_at = $4, revision = revision + 1 WHERE id = $5`
	if state == Active {
		sql = strings.ReplaceAll(sql, "paused_", "resumed_")
		s.Resumed = stamp
	} else {
		s.Paused = stamp
	}
	n, err := tx.Exec(ctx, sql, string(state), by.By, by.Actor, us, s.ID)
	switch {
	case err != nil:
		return s, false, fmt.Errorf("schedules: set state: %w", err)
	case n != 1:
		return s, false, ErrNotFound
	}
	s.State, s.Updated, s.Revision = state, stamp.At, s.Revision+1
	return s, true, nil
}

// Position is where a page of List ends: the last schedule's creation time (µs) and id.
type Position struct {
	CreatedAt int64
	ID        string
}

// PositionOf is s's position in List's order.
func PositionOf(s Schedule) Position { return Position{CreatedAt: s.Created.At.UnixMicro(), ID: s.ID} }

// Filter selects a page of schedules: in State when not empty, after After when not nil,
// at most Limit.
type Filter struct {
	State State
	After *Position
	Limit int
}

// List reads one page of schedules, the newest first (then by id, descending), from the
// schedule_created index (or schedule_state_created with a state).
func List(ctx context.Context, q store.Querier, f Filter) ([]Schedule, error) {
	var (
		where []string
		args  []any
	)
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if f.State != "" {
		where = append(where, "state = "+arg(string(f.State)))
	}
	if f.After != nil {
		c, id := arg(f.After.CreatedAt), arg(f.After.ID)
		where = append(where, "(created_at < "+c+" OR (created_at = "+c+" AND id < "+id+"))")
	}
	sql := `SELECT ` + columns + ` FROM schedule`
	if len(where) > 0 {
		sql += ` WHERE ` + strings.Join(where, " AND ")
	}
	sql += ` ORDER BY created_at DESC, id DESC LIMIT ` + arg(int64(f.Limit))
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("schedules: list: %w", err)
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		s, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("schedules: list: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("schedules: list: %w", err)
	}
	return out, nil
}

// Taken is one step an invoice took in a batch: the plan's message it went in became the
// reminder draft DraftID.
type Taken struct {
	InvoiceID string
	Step      int
	DraftID   string
}

// RecordTaken records, in the transaction that wrote the drafts, the steps the invoices of a
// batch of the schedule prepared on date took. This is how "had a step" is recorded: an
// invoice has had step k of a schedule while the draft its row names is not discarded (open,
// queued, sent or undeliverable); a draft discarded — its batch lapsed unapproved, its
// customer asked not to be contacted — gives the step back, and a later batch records it
// again over the old row.
func RecordTaken(ctx context.Context, tx store.Tx, scheduleID string, date string, taken []Taken, now time.Time) error {
	for _, t := range taken {
		n, err := tx.Exec(ctx, `INSERT INTO schedule_step (schedule_id, invoice_id, step, draft_id, prepared_on, created_at)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (schedule_id, invoice_id, step) DO UPDATE SET draft_id = excluded.draft_id, prepared_on = excluded.prepared_on, created_at = excluded.created_at
WHERE schedule_step.draft_id IN (SELECT id FROM reminder_draft WHERE state = 'discarded')`,
			scheduleID, t.InvoiceID, int64(t.Step), t.DraftID, date, now.UnixMicro())
		if err != nil {
			return fmt.Errorf("schedules: record taken: %w", err)
		}
		if n == 0 {
			// The step is had, by a draft not discarded: a plan never proposes it, so a
			// caller recording it again acts on a stale plan.
			return fmt.Errorf("schedules: record taken: invoice %s already had step %d of schedule %s", t.InvoiceID, t.Step, scheduleID)
		}
	}
	return nil
}
