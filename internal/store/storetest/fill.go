package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
)

// The fills write rows of scale straight into the tables with INSERT … SELECT over a series
// (a million invoices in tens of seconds, where the packages' own writes take one at a time),
// for the tests and benchmarks of scale of the packages that read them and of the console
// that reads them all. Each is plain SQL: storetest imports no domain package. Each ends
// with ANALYZE, as autovacuum would.

// fillInvoicesSQL writes $1 invoices: 20 000 customers (C-0 … C-19999), due dates over two
// years from 2025-01-01, 70% paid, 20% open, 10% partially paid, the cache consistent with
// that.
var fillInvoicesSQL = map[store.Dialect]string{
	store.Postgres: `INSERT INTO ledger_invoice (id, customer_id, amount_cents, currency, due_date, allocated_cents, state, open_cents, created_at, updated_at)
SELECT 'B-' || lpad(g::text, 7, '0'), 'C-' || (g % 20000), 1000 + g % 5000, 'BRL', to_char(date '2025-01-01' + (g % 730), 'YYYY-MM-DD'),
 CASE WHEN g % 10 < 7 THEN 1000 + g % 5000 WHEN g % 10 < 9 THEN 0 ELSE 100 END,
 CASE WHEN g % 10 < 7 THEN 'paid' WHEN g % 10 < 9 THEN 'open' ELSE 'partially_paid' END,
 CASE WHEN g % 10 < 7 THEN 0 WHEN g % 10 < 9 THEN 1000 + g % 5000 ELSE 900 + g % 5000 END, 0, 0
FROM generate_series(1, $1::int) g`,
	store.SQLite: `WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)
INSERT INTO ledger_invoice (id, customer_id, amount_cents, currency, due_date, allocated_cents, state, open_cents, created_at, updated_at)
SELECT printf('B-%07d', g), 'C-' || (g % 20000), 1000 + g % 5000, 'BRL', date('2025-01-01', '+' || (g % 730) || ' days'),
 CASE WHEN g % 10 < 7 THEN 1000 + g % 5000 WHEN g % 10 < 9 THEN 0 ELSE 100 END,
 CASE WHEN g % 10 < 7 THEN 'paid' WHEN g % 10 < 9 THEN 'open' ELSE 'partially_paid' END,
 CASE WHEN g % 10 < 7 THEN 0 WHEN g % 10 < 9 THEN 1000 + g % 5000 ELSE 900 + g % 5000 END, 0, 0
FROM s`,
}

// FillInvoices writes n invoices (B-0000001 …; fillInvoicesSQL says which) on either store.
func FillInvoices(ctx context.Context, q store.Querier, n int) error {
	d, _ := store.DialectOf(q)
	return run(ctx, q, stmt{fillInvoicesSQL[d], []any{n}})
}

// fillPaymentsSQL writes, on PostgreSQL, a reminder's reference (TX + the invoice's number)
// recorded on one invoice in four, then $1 payments (pay_0000001 …, created_at g), paid on
// 2026-06-01: three in four with something left, one in two quoting a reference no invoice
// carries, each naming one of FillInvoices's customers.
var fillPaymentsSQL = []string{
	`INSERT INTO ledger_reference (invoice_id, reference, source, source_id, created_at)
 SELECT id, 'TX' || substr(id, 3), 'reminder', 'd_' || id, 0 FROM ledger_invoice WHERE amount_cents % 4 = 0`,
	`INSERT INTO ledger_payment (id, source, source_ref, amount_cents, currency, paid_on, method, reference,
 customer_id, left_cents, recorded_by, created_at)
SELECT 'pay_' || lpad(g::text, 7, '0'), 'bench', 'u' || g, 1000 + g % 5000, 'BRL', '2026-06-01', 'pix',
 CASE WHEN g % 2 = 0 THEN 'REF' || g ELSE '' END, 'C-' || (g % 20000), CASE WHEN g % 4 = 0 THEN 0 ELSE 1000 + g % 5000 END, 'ana', g
FROM generate_series(1, $1::int) g`,
}

// FillPayments writes n payments over the invoices FillInvoices wrote (fillPaymentsSQL), on
// PostgreSQL.
func FillPayments(ctx context.Context, q store.Querier, n int) error {
	return run(ctx, q, stmt{fillPaymentsSQL[0], nil}, stmt{fillPaymentsSQL[1], []any{n}})
}

// fillSettledSQL gives each paid invoice of FillInvoices's ledger (7 in 10) a payment made
// three days after its due date (P-0000001 …, nothing left) and its allocation: 700 000 of
// each for a million invoices.
var fillSettledSQL = map[store.Dialect][]string{
	store.Postgres: {`INSERT INTO ledger_payment (id, source, source_ref, amount_cents, currency, paid_on, method, left_cents, recorded_by, created_at)
SELECT 'P-' || lpad(g::text, 7, '0'), 'bench', 'r' || g, 1000 + g % 5000, 'BRL', to_char(date '2025-01-01' + (g % 730) + 3, 'YYYY-MM-DD'), 'pix', 0, 'bench', g
FROM generate_series(1, $1::int) g WHERE g % 10 < 7`,
		`INSERT INTO ledger_allocation (payment_id, invoice_id, amount_cents, rule, allocated_by, created_at)
SELECT 'P-' || lpad(g::text, 7, '0'), 'B-' || lpad(g::text, 7, '0'), 1000 + g % 5000, 'reference', 'bench', g
FROM generate_series(1, $1::int) g WHERE g % 10 < 7`},
	store.SQLite: {`WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)
INSERT INTO ledger_payment (id, source, source_ref, amount_cents, currency, paid_on, method, left_cents, recorded_by, created_at)
SELECT printf('P-%07d', g), 'bench', 'r' || g, 1000 + g % 5000, 'BRL', date('2025-01-01', '+' || (g % 730 + 3) || ' days'), 'pix', 0, 'bench', g
FROM s WHERE g % 10 < 7`,
		`WITH RECURSIVE s(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM s WHERE g < $1)
INSERT INTO ledger_allocation (payment_id, invoice_id, amount_cents, rule, allocated_by, created_at)
SELECT printf('P-%07d', g), printf('B-%07d', g), 1000 + g % 5000, 'reference', 'bench', g
FROM s WHERE g % 10 < 7`},
}

// FillSettled pays the paid invoices among FillInvoices's first n (fillSettledSQL), on either
// store.
func FillSettled(ctx context.Context, q store.Querier, n int) error {
	d, _ := store.DialectOf(q)
	return run(ctx, q, stmt{fillSettledSQL[d][0], []any{n}}, stmt{fillSettledSQL[d][1], []any{n}})
}

// fillTrailSQL writes $1 audit events ending at $2: a week of calls, 20 tools
// (collections.tool_0 …) over 4 tiers, 500 subjects, 7 agents on a third of the calls,
// 5 clients, 2% denied, 0.5% failed and 0.1% rate limited. Their MACs are random: the trail
// does not check them; none is sealed.
var fillTrailSQL = map[store.Dialect]string{
	store.Postgres: `INSERT INTO audit_event (occurred_at, event, tool, risk, subject, actor, client_id, outcome, duration_us, details, server_time, nonce, mac)
SELECT $2::timestamptz - ($1::bigint - i) * (604800000000 / $1::bigint) * interval '1 microsecond', 'collections.call',
  'collections.tool_' || (i % 20), (ARRAY['low','medium','high','critical'])[1 + (i % 20) % 4], 'user-' || (i % 500),
  CASE WHEN i % 3 = 0 THEN 'agent-' || (i % 7) ELSE '' END, 'client-' || (i % 5),
  CASE WHEN i % 1000 = 0 THEN 'rate_limited' WHEN i % 200 = 0 THEN 'failed' WHEN i % 50 = 0 THEN 'denied' ELSE 'allowed' END,
  i % 5000, '{}', 0, decode(md5(i::text), 'hex'), sha256(i::text::bytea)
FROM generate_series(1, $1::bigint) i`,
	store.SQLite: `WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < $1)
INSERT INTO audit_event (occurred_at, event, tool, risk, subject, actor, client_id, outcome, duration_us, details, server_time, nonce, mac)
SELECT $2 - ($1 - i) * (604800000000 / $1), 'collections.call',
  'collections.tool_' || (i % 20), CASE (i % 20) % 4 WHEN 0 THEN 'low' WHEN 1 THEN 'medium' WHEN 2 THEN 'high' ELSE 'critical' END, 'user-' || (i % 500),
  CASE WHEN i % 3 = 0 THEN 'agent-' || (i % 7) ELSE '' END, 'client-' || (i % 5),
  CASE WHEN i % 1000 = 0 THEN 'rate_limited' WHEN i % 200 = 0 THEN 'failed' WHEN i % 50 = 0 THEN 'denied' ELSE 'allowed' END,
  i % 5000, '{}', 0, randomblob(16), randomblob(32)
FROM g`,
}

// FillTrail writes n audit events over the week that ends at end (fillTrailSQL), on either
// store, as the store's owner may (the serving role cannot choose occurred_at).
func FillTrail(ctx context.Context, q store.Querier, n int, end time.Time) error {
	d, _ := store.DialectOf(q)
	var at any = end
	if d == store.SQLite {
		at = end.UnixMicro()
	}
	return run(ctx, q, stmt{fillTrailSQL[d], []any{int64(n), at}})
}

// fillSendingSQL writes, on PostgreSQL, FillInvoices's 20 000 customers (C-0 … C-19999),
// then $1 bulk sends of 20 drafts (FillID's ids), then $1 drafts (FillID's) with $2 bulk
// sends, one in a hundred
// undeliverable, one in ten open, one in ten queued, the rest sent; the first 20 × $2 sent
// ones are the bulk sends'.
var fillSendingSQL = []string{
	`INSERT INTO customer (id, name, email, email_key, created_at, updated_at)
SELECT 'C-' || g, 'Loja ' || g, 'contas' || g || '@loja.example', 'contas' || g || '@loja.example', 1, 1 FROM generate_series(0, 19999) g`,
	`INSERT INTO bulk_send (id, requested_by, plan_hash, total, skipped, created_at)
SELECT 'b_' || translate(lpad(g::text, 25, '0'), '0123456789', 'abcdefghij') || 'a', 'ana', repeat('ab', 32), 20, 0, g
FROM generate_series(1, $1::int) g`,
	`INSERT INTO reminder_draft (id, customer_id, recipient_name, recipient_email, tone, language, invoices, invoice_set_hash,
 invoice_count, total_cents, subject, body, state, created_by, created_at, updated_at, earliest_due_date,
 outbox_id, message_id, queued_by, queued_at, delivered_at, failed_at, failure_reason, bulk_id)
SELECT 'd_' || translate(lpad(g::text, 25, '0'), '0123456789', 'abcdefghij') || 'a', 'C-' || (g % 20000), 'Loja', 'contas@loja.example',
 'friendly', 'pt-BR', '[]', sha256(g::text::bytea), 1, 1000, 'Lembrete', 'Olá', s.state, 'ana', g, g, '2026-05-10',
 CASE WHEN s.state <> 'draft' THEN g END, CASE WHEN s.state <> 'draft' THEN '<m' || g || '@x>' END,
 CASE WHEN s.state <> 'draft' THEN 'ana' END, CASE WHEN s.state <> 'draft' THEN g END,
 CASE WHEN s.state = 'sent' THEN g END, CASE WHEN s.state = 'undeliverable' THEN g END,
 CASE WHEN s.state = 'undeliverable' THEN 'smtp: mailbox unavailable (reply 550 5.1.1)' END,
 CASE WHEN s.state <> 'draft' AND g <= 20 * $2::int THEN 'b_' || translate(lpad(((g + 19) / 20)::text, 25, '0'), '0123456789', 'abcdefghij') || 'a' END
FROM generate_series(1, $1::int) g,
 LATERAL (SELECT CASE WHEN g % 100 = 0 THEN 'undeliverable' WHEN g % 10 = 1 THEN 'draft' WHEN g % 10 = 2 THEN 'queued' ELSE 'sent' END AS state) s`,
}

// FillID is FillSending's id of row g with prefix (d_, b_): g's 25 digits in the letters a–j,
// then a, which ident's alphabet holds and ident.Valid takes (its last character holds 3 bits).
func FillID(prefix string, g int) string {
	return prefix + strings.Map(func(r rune) rune { return 'a' + r - '0' }, fmt.Sprintf("%025d", g)) + "a"
}

// FillSending writes the outbox of scale (fillSendingSQL): customers, drafts drafts and bulks
// bulk sends, on PostgreSQL.
func FillSending(ctx context.Context, q store.Querier, drafts, bulks int) error {
	return run(ctx, q, stmt{fillSendingSQL[0], nil}, stmt{fillSendingSQL[1], []any{bulks}}, stmt{fillSendingSQL[2], []any{drafts, bulks}})
}

type stmt struct {
	sql  string
	args []any
}

// run runs stmts in order, then ANALYZE.
func run(ctx context.Context, q store.Querier, stmts ...stmt) error {
	for _, s := range stmts {
		if _, err := q.Exec(ctx, s.sql, s.args...); err != nil {
			first, _, _ := strings.Cut(s.sql, "\n")
			return fmt.Errorf("storetest: fill: %s: %w", first, err)
		}
	}
	if _, err := q.Exec(ctx, `ANALYZE`); err != nil {
		return fmt.Errorf("storetest: fill: ANALYZE: %w", err)
	}
	return nil
}

// The console's store of scale (issue 29's "every page under 50 ms"): ConsoleVolume's sizes.
const (
	ConsoleInvoices = 1_000_000
	ConsolePayments = 100_000
	ConsoleEvents   = 100_000
	ConsoleDrafts   = 100_000
	ConsoleBulks    = 5_000
)

// ConsoleEnd is when the console's store of scale ends: its audit events are the week before
// it. A test of its pages sets its clock just after.
var ConsoleEnd = time.Date(2026, 6, 15, 12, 0, 0, 0, time.UTC)

// Step is what a caller of ConsoleVolume does to the store after the fills, in its template:
// what a domain package does that storetest cannot (which imports none), such as sealing the
// audit events. Its Name must say what Run does: it names the template.
type Step struct {
	Name string
	Run  func(ctx context.Context, db store.DB) error
}

// ConsoleVolume returns a fresh PostgreSQL database on pg, migrated and filled with every
// fill above at the Console sizes — ConsoleInvoices invoices, the paid ones' payments and
// allocations, ConsolePayments payments more (unmatched, most of them), ConsoleEvents audit
// events ending at ConsoleEnd, FillSending's outbox — and after them each of then, as its
// owner. The fills run once per server, into a template each call copies
// (pgtest.Cluster.Template), named after the migrations, the fills and the steps' names, so a
// changed fill makes a template of its own.
func ConsoleVolume(tb testing.TB, pg *pgtest.Cluster, then ...Step) *postgres.DB {
	tb.Helper()
	h := sha256.New()
	for _, s := range then {
		h.Write([]byte("step " + s.Name + "\x00"))
	}
	h.Write([]byte(migratedTemplate()))
	parts := append([]string{fillInvoicesSQL[store.Postgres], fillTrailSQL[store.Postgres], ConsoleEnd.String()}, fillSettledSQL[store.Postgres]...)
	for _, s := range append(parts, append(fillPaymentsSQL, fillSendingSQL...)...) {
		h.Write([]byte(s + "\x00"))
	}
	for _, n := range []int{ConsoleInvoices, ConsolePayments, ConsoleEvents, ConsoleDrafts, ConsoleBulks} {
		h.Write([]byte(strconv.Itoa(n) + "\x00"))
	}
	url := pg.Template(tb, "console_"+hex.EncodeToString(h.Sum(nil))[:16], func(ctx context.Context, url string) error {
		db, err := postgres.Open(ctx, url, quiet())
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.Exec(ctx, createAppRole); err != nil {
			return err
		}
		if _, err := db.Migrate(ctx); err != nil {
			return err
		}
		if err := FillInvoices(ctx, db, ConsoleInvoices); err != nil {
			return err
		}
		if err := FillSettled(ctx, db, ConsoleInvoices); err != nil {
			return err
		}
		if err := FillPayments(ctx, db, ConsolePayments); err != nil {
			return err
		}
		if err := FillSending(ctx, db, ConsoleDrafts, ConsoleBulks); err != nil {
			return err
		}
		if err := FillTrail(ctx, db, ConsoleEvents, ConsoleEnd); err != nil {
			return err
		}
		for _, s := range then {
			if err := s.Run(ctx, db); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		}
		// The visibility map set, as autovacuum leaves a table of this age: index-only scans
		// read no heap.
		_, err = db.Exec(ctx, `VACUUM`)
		return err
	})
	db, err := postgres.Open(context.Background(), url, quiet())
	if err != nil {
		tb.Fatalf("postgres.Open: %v", err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}
