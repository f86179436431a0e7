package collections_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
)

// TestLedgerWriteContracts: each ledger write tool's tier, scope and key, as the issue and
// the finance team's split of duties ask; the high ones are confirmed in band.
func TestLedgerWriteContracts(t *testing.T) {
	all, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]pipeline.Tool{}
	for _, tool := range all {
		byName[tool.Contract.Name] = tool
	}
	for name, want := range map[string]struct {
		risk  string
		scope string
	}{
		collections.RecordInvoicesName: {"medium", collections.InvoicesWriteScope},
		collections.RecordPaymentName:  {"high", collections.PaymentsWriteScope},
		collections.MatchPaymentName:   {"high", collections.PaymentsWriteScope},
		collections.RecordPromiseName:  {"medium", collections.PromisesWriteScope},
		collections.OpenDisputeName:    {"medium", collections.DisputesWriteScope},
		collections.ResolveDisputeName: {"medium", collections.DisputesWriteScope},
	} {
		tool, ok := byName[name]
		if !ok {
			t.Errorf("no tool %s", name)
			continue
		}
		c := tool.Contract
		if string(c.RiskLevel) != want.risk || !cmp.Equal(c.Permissions, []string{want.scope}) || !c.KeyRequired() || c.AuditEvent == "" {
			t.Errorf("%s: %s %v key %v audit %q; want %s %s, a key", name, c.RiskLevel, c.Permissions, c.KeyRequired(), c.AuditEvent, want.risk, want.scope)
		}
		if (want.risk == "high") != (tool.Preview != nil) {
			t.Errorf("%s: preview %v for tier %s", name, tool.Preview != nil, want.risk)
		}
	}
}

// TestLedgerWriteNeedsScope: each tool is refused to a caller without its scope, which
// holds every other.
func TestLedgerWriteNeedsScope(t *testing.T) {
	eachEnv(t, func(t *testing.T, e *env) {
		for tool, scope := range map[string]string{
			collections.RecordInvoicesName: collections.InvoicesWriteScope, collections.RecordPaymentName: collections.PaymentsWriteScope,
			collections.MatchPaymentName: collections.PaymentsWriteScope, collections.RecordPromiseName: collections.PromisesWriteScope,
			collections.OpenDisputeName: collections.DisputesWriteScope, collections.ResolveDisputeName: collections.DisputesWriteScope,
		} {
			pr := *ledgerAgent
			pr.Scopes = nil
			for _, s := range ledgerScopes {
				if s != scope {
					pr.Scopes = append(pr.Scopes, s)
				}
			}
			res := e.do(&pr, modern, tool, `{}`)
			if code, _ := failed(res); code != failure.InsufficientScope || !cmp.Equal(res.Missing, []string{scope}) {
				t.Errorf("%s without %s: %d %v missing %v", tool, scope, res.Kind, res.Err, res.Missing)
			}
		}
		if n := pipelinetest.Audited(t, e.db, collections.RecordInvoicesName); n["denied"] != 1 {
			t.Errorf("record_invoices audit %v, want the refusal denied", n)
		}
	})
}
