package auditlog

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/store"
)

// TrailFilter picks audit events for the trail (Trail) and for an export (Export). Empty
// fields match every event.
type TrailFilter struct {
	Tool    string  `json:"tool,omitempty"`
	Risk    string  `json:"risk,omitempty"` // the risk tier
	Outcome Outcome `json:"outcome,omitempty"`
	Subject string  `json:"subject,omitempty"` // on whose behalf: the person
	Actor   string  `json:"actor,omitempty"`   // the agent acting
	// ClientID is the OAuth client.
	ClientID string `json:"clientId,omitempty"`
	// Since and Until bound the event's time (Event.Time): Since <= time < Until; zero: open.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// outcomes are the outcomes an event can have, for checking a filter's.
var outcomes = []Outcome{Allowed, Rejected, Denied, RateLimited, Failed, InputRequired, Replayed, Unchanged, DryRun, Incomplete}

// Check says what is wrong with f, naming each field: every problem at once.
func (f TrailFilter) Check() error {
	var errs []error
	for _, c := range [...]struct{ name, v string }{
		{"tool", f.Tool}, {"risk", f.Risk}, {"subject", f.Subject}, {"actor", f.Actor}, {"clientId", f.ClientID},
	} {
		if err := checkField(c.name, c.v, MaxFieldBytes); err != nil {
			errs = append(errs, err)
		}
	}
	if f.Outcome != "" && !known(f.Outcome) {
		errs = append(errs, fmt.Errorf("outcome %q is not one of %v", f.Outcome, outcomes))
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Since.Before(f.Until) {
		errs = append(errs, errors.New("since is not before until"))
	}
	return errors.Join(errs...)
}

func known(o Outcome) bool {
	for _, k := range outcomes {
		if o == k {
			return true
		}
	}
	return false
}

// picks says whether f picks events by their content, beyond a time range: an export of such
// a filter holds events apart in the chain.
func (f TrailFilter) picks() bool {
	return f.Tool != "" || f.Risk != "" || f.Outcome != "" || f.Subject != "" || f.Actor != "" || f.ClientID != ""
}

// conditions appends f's conditions on the columns of audit_event e, their arguments
// numbered from len(args)+1, and returns both. Only fixed SQL: the values are arguments.
func (f TrailFilter) conditions(d store.Dialect, conds []string, args []any) ([]string, []any) {
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "$?", "$"+strconv.Itoa(len(args))))
	}
	for _, c := range [...]struct{ col, v string }{
		{"e.tool", f.Tool}, {"e.risk", f.Risk}, {"e.outcome", string(f.Outcome)},
		{"e.subject", f.Subject}, {"e.actor", f.Actor}, {"e.client_id", f.ClientID},
	} {
		if c.v != "" {
			add(c.col+" = $?", c.v)
		}
	}
	if !f.Since.IsZero() {
		add("e.occurred_at >= $?", timeArg(d, f.Since))
	}
	if !f.Until.IsZero() {
		add("e.occurred_at < $?", timeArg(d, f.Until))
	}
	return conds, args
}

// timeArg is t as the dialect's occurred_at compares with it: a timestamptz on PostgreSQL,
// Unix microseconds on SQLite.
func timeArg(d store.Dialect, t time.Time) any {
	if d == store.Postgres {
		return time.UnixMicro(t.UnixMicro()).UTC()
	}
	return t.UnixMicro()
}

// TrailPage is a page of the trail, newest first.
type TrailPage struct {
	// Events hold the events; Seq is 0 for an event the sealer has not put in the chain yet.
	Events []Event
	// Next is the cursor of the next (older) page, for Trail's after; "" on the last page.
	Next string
	// Through is the time of the oldest event the page looked at: it holds every event the
	// filter picks from its cursor down to then. A page with fewer events than its limit and
	// a Next stopped there at its bound (TrailScan), not at the end of the trail.
	Through time.Time
}

// MaxTrailPage bounds Trail's limit.
const MaxTrailPage = 200

// TrailScan is the most events a trail page looks at for its filter on content (tool, risk,
// outcome, subject, actor, client): their columns have no index of their own (every index
// costs each audit write: issue 31), so a page walks the time index from its cursor, and a
// rare value's page is cut at this bound rather than costing a walk of the whole log
// (docs/benchmarks.md).
const TrailScan = 5_000

// ErrBadCursor is returned by Trail for a cursor it did not make.
var ErrBadCursor = errors.New("audit trail: cursor: not one this server made")

// Trail reads a page of the audit trail: up to limit (1 to MaxTrailPage) events that f picks,
// newest first (by the time the store wrote them, then by id), the unsealed ones included,
// older than the page whose Next is after ("": the newest). Keyset pagination: a page costs
// the same however deep it is, and events written meanwhile do not shift the pages. A page
// looks at TrailScan events at most (see TrailPage.Through).
func (l *Log) Trail(ctx context.Context, f TrailFilter, after string, limit int) (TrailPage, error) {
	if limit < 1 || limit > MaxTrailPage {
		return TrailPage{}, fmt.Errorf("audit trail: limit %d: want 1 to %d", limit, MaxTrailPage)
	}
	if err := f.Check(); err != nil {
		return TrailPage{}, fmt.Errorf("audit trail: %w", err)
	}
	var c *trailCursor
	if after != "" {
		cur, err := parseTrailCursor(after)
		if err != nil {
			return TrailPage{}, err
		}
		c = &cur
	}
	d := l.db.Dialect()
	sql, args := trailSQL(d, f, c, limit+1, l.trailScan)
	rows, err := l.db.Query(ctx, sql, args...)
	if err != nil {
		return TrailPage{}, fmt.Errorf("audit trail: %w", err)
	}
	defer rows.Close()
	var page TrailPage
	var last trailCursor
	for rows.Next() {
		var ev Event
		var id, timeUS, durUS, serverUS int64
		var outcome, details string
		err := rows.Scan(&id, &timeUS, &ev.Seq, &ev.Name, &ev.Tool, &ev.Risk, &ev.Subject, &ev.Actor, &ev.ClientID,
			&ev.ACR, &ev.RequestID, &outcome, &ev.FailureCode, &ev.ArgsDigest, &ev.ResultDigest, &durUS, &serverUS, &details)
		if err != nil {
			return TrailPage{}, fmt.Errorf("audit trail: %w", err)
		}
		if len(page.Events) == limit {
			page.Next = last.String()
			break
		}
		setTimes(&ev, timeUS, durUS, serverUS)
		ev.Outcome = Outcome(outcome)
		if ev.Details, err = parseDetails(details); err != nil {
			return TrailPage{}, fmt.Errorf("audit trail: event %d: %w", id, err)
		}
		page.Events = append(page.Events, ev)
		last = trailCursor{timeUS: timeUS, id: id}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return TrailPage{}, fmt.Errorf("audit trail: %w", err)
	}
	if page.Next == "" && f.picks() {
		// Short of a full page: did the window end before the trail did, and where? Only
		// then is the window walked again, to its last event.
		sql, args := trailEdgeSQL(d, f, c, l.trailScan)
		switch err := l.db.QueryRow(ctx, sql, args...).Scan(&last.id, &last.timeUS); {
		case errors.Is(err, store.ErrNoRows): // the window reached the end of the trail
		case err != nil:
			return TrailPage{}, fmt.Errorf("audit trail: %w", err)
		default:
			page.Next = last.String()
		}
	}
	if page.Next != "" {
		page.Through = time.UnixMicro(last.timeUS).UTC()
	}
	return page, nil
}

// Trail's SQL. The index on occurred_at serves the page's order: on SQLite it holds the row
// id; on PostgreSQL an incremental sort orders the events of one microsecond by id. A filter
// on content applies to a window: the scan newest events older than the cursor within the
// time range.

// trailWindow is the window's conditions and arguments, the arguments numbered from 1.
func trailWindow(d store.Dialect, f TrailFilter, c *trailCursor) ([]string, []any) {
	var conds []string
	var args []any
	if c != nil {
		// The first condition bounds the index scan; the second orders ties by id.
		args = append(args, timeArg(d, time.UnixMicro(c.timeUS)), c.id)
		conds = append(conds, "e.occurred_at <= $1", "(e.occurred_at < $1 OR e.id < $2)")
	}
	return TrailFilter{Since: f.Since, Until: f.Until}.conditions(d, conds, args)
}

const trailOrder = "\nORDER BY e.occurred_at DESC, e.id DESC"

// trailSQL is the query of a trail page: up to limit events f picks older than c (nil: from
// the newest), with their seal's seq (0: none yet), within the window of scan events.
func trailSQL(d store.Dialect, f TrailFilter, c *trailCursor, limit, scan int) (string, []any) {
	conds, args := trailWindow(d, f, c)
	timeUS, details := "w.occurred_at", "w.details"
	if d == store.Postgres {
		timeUS, details = "(extract(epoch FROM w.occurred_at) * 1000000)::bigint", "w.details::text"
	}
	inner := "SELECT e.* FROM audit_event e" + where(conds) + trailOrder
	var picks []string
	if f.picks() {
		args = append(args, int64(scan))
		inner += " LIMIT $" + strconv.Itoa(len(args))
		picks, args = TrailFilter{Tool: f.Tool, Risk: f.Risk, Outcome: f.Outcome, Subject: f.Subject, Actor: f.Actor, ClientID: f.ClientID}.conditions(d, nil, args)
	}
	args = append(args, int64(limit))
	return "SELECT w.id, " + timeUS + ", coalesce((SELECT s.seq FROM audit_seal s WHERE s.event_id = w.id), 0), " +
		strings.ReplaceAll(columns, "e.", "w.") + ", " + details + "\nFROM (" + inner + ") w" +
		strings.ReplaceAll(where(picks), "e.", "w.") + "\nORDER BY w.occurred_at DESC, w.id DESC LIMIT $" + strconv.Itoa(len(args)), args
}

// trailEdgeSQL reads the last event of a full window after c: its id and time.
func trailEdgeSQL(d store.Dialect, f TrailFilter, c *trailCursor, scan int) (string, []any) {
	conds, args := trailWindow(d, f, c)
	timeUS := "e.occurred_at"
	if d == store.Postgres {
		timeUS = "(extract(epoch FROM e.occurred_at) * 1000000)::bigint"
	}
	args = append(args, int64(scan-1))
	return "SELECT e.id, " + timeUS + " FROM audit_event e" + where(conds) + trailOrder +
		" LIMIT 1 OFFSET $" + strconv.Itoa(len(args)), args
}

func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return "\nWHERE " + strings.Join(conds, " AND ")
}

// trailCursor is the last event of a trail page: its time in Unix microseconds and its id.
type trailCursor struct{ timeUS, id int64 }

// TrailCursor is the cursor of Trail's page that ends at the event whose row id is id,
// occurred at occurred: the next page starts after it.
func TrailCursor(occurred time.Time, id int64) string {
	return trailCursor{timeUS: occurred.UnixMicro(), id: id}.String()
}

// String is the cursor as Trail takes it: "<time µs>.<id>", both in base 36.
func (c trailCursor) String() string {
	return strconv.FormatInt(c.timeUS, 36) + "." + strconv.FormatInt(c.id, 36)
}

func parseTrailCursor(s string) (trailCursor, error) {
	t, id, ok := strings.Cut(s, ".")
	if !ok || len(s) > 32 {
		return trailCursor{}, ErrBadCursor
	}
	var c trailCursor
	var err1, err2 error
	c.timeUS, err1 = strconv.ParseInt(t, 36, 64)
	c.id, err2 = strconv.ParseInt(id, 36, 64)
	if err1 != nil || err2 != nil || c.id <= 0 || c.timeUS < 0 || c.String() != s {
		return trailCursor{}, ErrBadCursor
	}
	return c, nil
}
