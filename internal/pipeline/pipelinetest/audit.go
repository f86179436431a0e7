package pipelinetest

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/store"
)

// Audited counts the audit events of tool in db by outcome.
func Audited(t testing.TB, db store.Querier, tool string) map[string]int {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT outcome FROM audit_event WHERE tool = $1`, tool)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		out[o]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
