package pipelinetest

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/pipeline"
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

// Auditor returns the Auditor of the server on db, under a fresh random audit key.
func Auditor(t testing.TB, db store.DB) pipeline.Auditor {
	t.Helper()
	return pipeline.NewAuditor(AuditLog(t, db))
}

// AuditLog returns the server's audit log on db under a fresh random audit
// key, and the digester of its call events (pipeline.NewAuditor takes both;
// the audit log alone writes the events that are not tool calls).
func AuditLog(t testing.TB, db store.DB) (*auditlog.Log, *auditlog.Digester) {
	t.Helper()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	alog, err := auditlog.New(db, key, auditlog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := auditlog.NewDigester(key)
	if err != nil {
		t.Fatal(err)
	}
	return alog, digest
}
