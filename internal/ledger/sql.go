package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/store"
)

// The SQL of the store half: small statements with $n placeholders. Where
// many rows go at once, the statement is built for that many rows from
// constant pieces (never from input): a multi-row INSERT, or an UPDATE from
// a VALUES list.

// maxParams bounds the placeholders of one statement: under SQLite's 32 766
// and PostgreSQL's 65 535.
const maxParams = 30000

// chunkRows is how many rows of cols columns one statement carries.
func chunkRows(cols int) int { return maxParams / cols }

// placeholders appends "($1, $2, …), …" for rows rows of cols columns in
// dialect d, with the PostgreSQL casts of the first row when casts is not
// nil (a VALUES list outside an INSERT has no column types to infer). On
// SQLite they are anonymous, ?, ?…, which mean the same in the same order:
// SQLite keeps a list of the named and numbered ones and the driver looks
// each one's name up in it, one by one, which for thousands of
// placeholders costs more than the statement.
func placeholders(b *strings.Builder, d store.Dialect, rows, cols int, casts []string) {
	n := 1
	for r := range rows {
		if r > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for c := range cols {
			if c > 0 {
				b.WriteString(", ")
			}
			if d == store.SQLite {
				b.WriteByte('?')
			} else {
				b.WriteByte('$')
				b.WriteString(strconv.Itoa(n))
			}
			if r == 0 && casts != nil {
				b.WriteString("::")
				b.WriteString(casts[c])
			}
			n++
		}
		b.WriteByte(')')
	}
}

// insertSQL is INSERT INTO table (cols) VALUES (…), … for rows rows in
// dialect d, then
// suffix (ON CONFLICT …, RETURNING …).
func insertSQL(d store.Dialect, table string, cols []string, rows int, suffix string) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES ")
	placeholders(&b, d, rows, len(cols), nil)
	if suffix != "" {
		b.WriteString(" " + suffix)
	}
	return b.String()
}

// column is a column an UPDATE sets from a VALUES list, with its
// PostgreSQL type.
type column struct{ name, pgType string }

// updateSQL sets cols[1:] of the rows of table whose cols[0] (the key)
// matches, from rows rows of values, in dialect d.
func updateSQL(d store.Dialect, table string, cols []column, rows int) string {
	var b strings.Builder
	b.WriteString("UPDATE " + table + " AS t SET ")
	ref := func(i int) string {
		if d == store.Postgres {
			return "v." + cols[i].name
		}
		return "v.column" + strconv.Itoa(i+1)
	}
	for i := 1; i < len(cols); i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		b.WriteString(cols[i].name + " = " + ref(i))
	}
	b.WriteString(" FROM (VALUES ")
	var casts []string
	if d == store.Postgres {
		for _, c := range cols {
			casts = append(casts, c.pgType)
		}
	}
	placeholders(&b, d, rows, len(cols), casts)
	b.WriteString(") AS v")
	if d == store.Postgres {
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.name
		}
		b.WriteString(" (" + strings.Join(names, ", ") + ")")
	}
	b.WriteString(" WHERE t." + cols[0].name + " = " + ref(0))
	return b.String()
}

// writeRows runs one statement per chunk of n rows of cols columns, the
// statement for k rows made by stmt(k), row i's values by row(i); the
// rows each statement returns are read by fn, when it is not nil.
func writeRows(ctx context.Context, q store.Querier, n, cols int, stmt func(rows int) string, row func(i int) []any, fn func(store.Rows) error) error {
	per := chunkRows(cols)
	for start := 0; start < n; start += per {
		end := min(n, start+per)
		args := make([]any, 0, (end-start)*cols)
		for i := start; i < end; i++ {
			args = append(args, row(i)...)
		}
		var err error
		if fn == nil {
			_, err = q.Exec(ctx, stmt(end-start), args...)
		} else {
			err = scanRows(ctx, q, stmt(end-start), args, fn)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// jsonList is the argument of store.InList: the JSON text of ss.
func jsonList(ss []string) string {
	if ss == nil {
		ss = []string{}
	}
	b, err := json.Marshal(ss)
	if err != nil {
		panic(fmt.Sprintf("ledger: marshal a []string: %v", err)) // cannot fail
	}
	return string(b)
}

// forUpdate is the locking clause of a statement reading rows it will
// change, on PostgreSQL; SQLite's write transaction holds the whole
// database from BEGIN IMMEDIATE.
func forUpdate(d store.Dialect, of string) string {
	if d != store.Postgres {
		return ""
	}
	if of == "" {
		return " FOR UPDATE"
	}
	return " FOR UPDATE OF " + of
}

func dialect(q store.Querier) store.Dialect {
	d, ok := store.DialectOf(q)
	if !ok {
		// Every Querier of the store's implementations says; a test double
		// speaks SQLite's SQL, the one without locking clauses.
		return store.SQLite
	}
	return d
}
