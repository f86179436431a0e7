package pipeline

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/google/jsonschema-go/jsonschema"
)

// FuzzControl: whatever the arguments, the pipeline's own reading of them
// (idempotencyKey, dryRun, planHash: the contract's dry run is mandatory)
// never panics, refuses only with invalid_arguments or dry_run_required
// naming a field, and, when it accepts, leaves the tool one JSON object
// without those members, whose fingerprint does not depend on how the
// caller spelled it.
func FuzzControl(f *testing.F) {
	for _, s := range []string{
		`{"customer":"c","idempotencyKey":"k"}`,
		`{"idempotencyKey":"k","dryRun":true,"customer":"c\u0031"}`,
		`{"idempotencyKey":"A","idempotencyKey":"B"}`,
		`{"dryRun":null,"idempotencyKey":"k"}`,
		`{"amount":9007199254740993,"idempotencyKey":"k"}`,
		`{"note":{"x":[1,2.5e3,"\ud83d\ude00"]},"idempotencyKey":"\u00e9"}`,
		`{"idempotencyKey":"zz\ud800X"}`,
		`[]`, `null`, `{`, `{"idempotencyKey":7}`,
		`{"customer":"c","idempotencyKey":"k","planHash":"` + strings.Repeat("0a", 32) + `"}`,
		`{"dryRun":true,"planHash":"` + strings.Repeat("f", 64) + `"}`,
		`{"idempotencyKey":"k","planHash":"` + strings.Repeat("F", 64) + `"}`,
		`{"idempotencyKey":"k","planHash":"\u0030` + strings.Repeat("0", 63) + `"}`,
		`{"dryRun":false,"idempotencyKey":"k"}`,
	} {
		f.Add([]byte(s))
	}
	c, err := contract.Finish(contract.Contract{
		Name: "test.fuzz", Title: "Fuzz", Description: "fuzz", Category: "test", RiskLevel: contract.Medium,
		ContractVersion: "1.0.0",
		InputSchema:     &jsonschema.Schema{Type: "object"},
		OutputSchema:    &jsonschema.Schema{Type: "object"},
		Permissions:     []string{"test:fuzz"},
		SideEffects:     contract.SideEffects{Changes: []string{"a row"}, OnRepeat: "the first answer"},
		AuditEvent:      "test.fuzz", Idempotency: contract.Idempotency{Kind: "key"}, DryRun: contract.ModeMandatory,
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a := &args{raw: raw}
		err := a.control(c, raw)
		if err != nil {
			fe, ok := failure.As(err)
			if !ok || (fe.Code != failure.InvalidArguments && fe.Code != failure.DryRunRequired) || fe.Field == "" {
				t.Fatalf("control(%q) = %v, want invalid_arguments or dry_run_required naming a field", raw, err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(a.raw, &obj); err != nil || obj == nil {
			t.Fatalf("control(%q) left %q, not an object: %v", raw, a.raw, err)
		}
		if _, ok := obj[contract.ArgIdempotencyKey]; ok {
			t.Fatalf("control(%q) left the key in the tool's arguments %q", raw, a.raw)
		}
		if _, ok := obj[contract.ArgDryRun]; ok {
			t.Fatalf("control(%q) left dryRun in the tool's arguments %q", raw, a.raw)
		}
		if _, ok := obj[contract.ArgPlanHash]; ok {
			t.Fatalf("control(%q) left planHash in the tool's arguments %q", raw, a.raw)
		}
		if a.dryRun == (a.plan != "") {
			t.Fatalf("control(%q): dryRun %v with plan %q: a real call cites a plan, a dry run none", raw, a.dryRun, a.plan)
		}
		if err := a.fingerprint(); err != nil {
			t.Fatalf("control accepted %q, fingerprint refused it: %v", raw, err)
		}
		// The same arguments re-spelled (re-encoded) give the same fingerprint.
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		again, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b := &args{raw: again}
		if err := b.control(c, again); err != nil {
			t.Fatalf("control accepted %q but not its re-encoding %q: %v", raw, again, err)
		}
		if err := b.fingerprint(); err != nil || b.digest != a.digest || b.bound != a.bound || b.key != a.key || b.dryRun != a.dryRun || b.plan != a.plan {
			t.Fatalf("%q and its re-encoding %q differ: key %q/%q, dryRun %v/%v, fingerprint equal %v (%v)", raw, again, a.key, b.key, a.dryRun, b.dryRun, b.digest == a.digest, err)
		}
	})
}
