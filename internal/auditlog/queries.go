package auditlog

import (
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/store"
)

// sealLockID is the PostgreSQL advisory lock held by the one sealer at work ("audit-sl").
const sealLockID int64 = 0x61756469742d736c

// queries are the dialect's SQL, fixed when the Log is made.
type queries struct {
	insert string
	// head reads the chain's head: its seq, hash and event id, and where the sealer reads
	// next from it — on PostgreSQL the xid (as text) of the head's event, '' when that event
	// is missing; on SQLite the event id alone is the cursor.
	head string
	// candidates selects the events to seal next: $1 cursor xid (PostgreSQL) or cursor id
	// (SQLite), $2 cursor id (PostgreSQL), last: the batch size.
	candidates string
	sealLock   string // empty on SQLite, where the write transaction is the lock
	// events selects sealed events by seq (inner join); chain selects every seal with its
	// event, if any (outer join), for Verify; chainSelect is chain without its ORDER BY, for
	// Export to add its conditions to.
	events, chain, chainSelect string
	// unsealed counts the committed events past the chain head's cursor that have no seal
	// yet, at most the last argument, with the time of the oldest (µs, 0 when none): the
	// candidates' range, read by Lag.
	unsealed string
}

const (
	insertSeal    = `INSERT INTO audit_seal (seq, event_id, alg, prev_hash, hash) VALUES ($1, $2, $3, $4, $5)`
	insertSealsPG = `INSERT INTO audit_seal (seq, event_id, alg, prev_hash, hash)
SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::smallint[], $4::bytea[], $5::bytea[])`
	columns   = `e.event, e.tool, e.risk, e.subject, e.actor, e.client_id, e.acr, e.request_id, e.outcome, e.failure_code, e.args_digest, e.result_digest, e.duration_us, coalesce(e.server_time, 0)`
	coalesced = `coalesce(e.event, ''), coalesce(e.tool, ''), coalesce(e.risk, ''), coalesce(e.subject, ''), coalesce(e.actor, ''), coalesce(e.client_id, ''), coalesce(e.acr, ''), coalesce(e.request_id, ''), coalesce(e.outcome, ''), coalesce(e.failure_code, ''), coalesce(e.args_digest, ''), coalesce(e.result_digest, ''), coalesce(e.duration_us, 0), coalesce(e.server_time, 0)`
	// insertColumns are what the server writes of an event, in the order of insertArgs; on
	// SQLite occurred_at follows.
	insertColumns = `event, tool, risk, subject, actor, client_id, acr, request_id, outcome, failure_code, args_digest, result_digest, duration_us, details, server_time, nonce, mac, key_id`
	insertCount   = 18
	detailsColumn = 14 // 1-based, cast to jsonb on PostgreSQL
)

// insertSQL is the INSERT of n events (insertArgs each) in dialect d; with skipKnown, an event
// whose nonce is already in the table is skipped (the spool's replay after a crash).
func insertSQL(d store.Dialect, n int, skipKnown bool) string {
	cols := insertCount
	var sb strings.Builder
	sb.WriteString(`INSERT INTO audit_event (` + insertColumns)
	if d == store.SQLite {
		sb.WriteString(`, occurred_at`)
		cols++
	}
	sb.WriteString(`) VALUES `)
	for i := range n {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('(')
		for c := 1; c <= cols; c++ {
			if c > 1 {
				sb.WriteByte(',')
			}
			sb.WriteByte('$')
			sb.WriteString(strconv.Itoa(i*cols + c))
			if c == detailsColumn && d == store.Postgres {
				sb.WriteString(`::text::jsonb`)
			}
		}
		sb.WriteByte(')')
	}
	if skipKnown {
		sb.WriteString(` ON CONFLICT (nonce) DO NOTHING`)
	}
	return sb.String()
}

// insertArgs appends the arguments of one event to insertSQL's statement; nowUS is the
// occurred_at of SQLite, ignored on PostgreSQL.
func insertArgs(args []any, r *record, d store.Dialect, nowUS int64) []any {
	ev := &r.ev
	var keyID any // NULL: a record from before key ids, under the legacy key
	if r.keyID != "" {
		keyID = r.keyID
	}
	args = append(args,
		ev.Name, ev.Tool, ev.Risk, ev.Subject, ev.Actor, ev.ClientID, ev.ACR, ev.RequestID,
		string(ev.Outcome), ev.FailureCode, ev.ArgsDigest, ev.ResultDigest,
		ev.Duration.Microseconds(), r.details, ev.ServerTime.UnixMicro(), r.nonce, r.mac, keyID)
	if d == store.SQLite {
		args = append(args, nowUS)
	}
	return args
}

func queriesFor(d store.Dialect) queries {
	if d == store.Postgres {
		const timeUS = `(extract(epoch FROM e.occurred_at) * 1000000)::bigint`
		const contentCols = timeUS + `, ` + columns + `, e.details::text`
		return queries{
			insert: insertSQL(d, 1, false),
			head: `SELECT s.seq, s.hash, s.event_id, coalesce(e.xid::text, '')
FROM audit_seal s LEFT JOIN audit_event e ON e.id = s.event_id
ORDER BY s.seq DESC LIMIT 1`,
			// The horizon: every transaction with a smaller id has ended, so every event it
			// committed is visible now and no new one can appear below it.
			candidates: `SELECT e.id, ` + contentCols + `
FROM audit_event e
WHERE e.xid < pg_snapshot_xmin(pg_current_snapshot())
  AND (e.xid, e.id) > ($1::text::xid8, $2::bigint)
  AND NOT EXISTS (SELECT FROM audit_seal s WHERE s.event_id = e.id)
ORDER BY e.xid, e.id
LIMIT $3`,
			sealLock: `SELECT pg_advisory_xact_lock($1)`,
			unsealed: `SELECT count(*), COALESCE(min(t), 0) FROM (
SELECT ` + timeUS + ` AS t FROM audit_event e
WHERE (e.xid, e.id) > ($1::text::xid8, $2::bigint)
  AND NOT EXISTS (SELECT FROM audit_seal s WHERE s.event_id = e.id)
LIMIT $3) u`,
			events: `SELECT s.seq, ` + contentCols + `
FROM audit_seal s JOIN audit_event e ON e.id = s.event_id
WHERE s.seq > $1 ORDER BY s.seq LIMIT $2`,
			chainSelect: chainPG,
			chain:       chainPG + "\nORDER BY s.seq",
		}
	}
	const contentCols = `e.occurred_at, ` + columns + `, e.details`
	return queries{
		insert: insertSQL(d, 1, false),
		head:   `SELECT seq, hash, event_id FROM audit_seal ORDER BY seq DESC LIMIT 1`,
		// Writers are serialized, so row id order is commit order.
		candidates: `SELECT e.id, ` + contentCols + `
FROM audit_event e
WHERE e.id > $1
  AND NOT EXISTS (SELECT 1 FROM audit_seal s WHERE s.event_id = e.id)
ORDER BY e.id
LIMIT $2`,
		unsealed: `SELECT count(*), COALESCE(min(occurred_at), 0) FROM (
SELECT e.occurred_at FROM audit_event e
WHERE e.id > $1
  AND NOT EXISTS (SELECT 1 FROM audit_seal s WHERE s.event_id = e.id)
LIMIT $2) u`,
		events: `SELECT s.seq, ` + contentCols + `
FROM audit_seal s JOIN audit_event e ON e.id = s.event_id
WHERE s.seq > $1 ORDER BY s.seq LIMIT $2`,
		chainSelect: chainSQLite,
		chain:       chainSQLite + "\nORDER BY s.seq",
	}
}

// chainPG and chainSQLite select every seal with its event, if any (outer join).
const (
	chainPG = `SELECT s.seq, s.alg, s.prev_hash, s.hash, coalesce(e.id, 0), coalesce((extract(epoch FROM e.occurred_at) * 1000000)::bigint, 0), ` + coalesced + `, coalesce(e.details::text, '{}'), e.nonce, e.mac, coalesce(e.key_id, '')
FROM audit_seal s LEFT JOIN audit_event e ON e.id = s.event_id`
	chainSQLite = `SELECT s.seq, s.alg, s.prev_hash, s.hash, coalesce(e.id, 0), coalesce(e.occurred_at, 0), ` + coalesced + `, coalesce(e.details, '{}'), e.nonce, e.mac, coalesce(e.key_id, '')
FROM audit_seal s LEFT JOIN audit_event e ON e.id = s.event_id`
)
