package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMigrateRefusesPooler: migrations hold a session lock, which a pooler in transaction
// mode cannot keep, so `cobranca migrate` refuses to run through one before it connects.
func TestMigrateRefusesPooler(t *testing.T) {
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_AUTO_MIGRATE=false", "COBRANCA_DATABASE_POOLER=transaction",
		"COBRANCA_DATABASE_URL=postgres://cobranca_owner@pgbouncer.invalid:6432/cobranca?default_query_exec_mode=cache_describe"}
	var out bytes.Buffer
	err := run(t.Context(), []string{"migrate"}, environ, nil, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "COBRANCA_DATABASE_POOLER") || !strings.Contains(err.Error(), "straight to PostgreSQL") {
		t.Errorf("migrate through a transaction pooler = %v, want a refusal naming COBRANCA_DATABASE_POOLER", err)
	}
}
