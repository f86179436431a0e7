package pipeline

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/canonical"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
)

// canonicalRule says what arguments must be to have one canonical form.
const canonicalRule = "must be one JSON object with each member named once, every string valid Unicode (no unpaired surrogate) and every number within the range of a double"

// control takes the arguments the pipeline reads itself (idempotencyKey,
// dryRun, planHash) out of raw, checks them, and leaves in a.raw what the
// tool reads. The arguments must have one reading: a member named twice, an
// unpaired surrogate escape (at any level, the key included), or an integer
// beyond ±2^53 is refused before anything reads them (a reader that keeps the
// first of two dryRun members must never see a dry run where the server
// acts). A dry run needs no idempotency key, nor a plan hash (it makes one).
func (a *args) control(c *contract.Contract, raw []byte) error {
	if err := exactNumbers(raw); err != nil {
		return err
	}
	if _, err := canonical.Transform(raw); err != nil {
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: canonicalRule, Err: err}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "must be a JSON object"}
	}
	a.checked = true
	keyRaw, hasKey := obj[contract.ArgIdempotencyKey]
	dryRaw, hasDry := obj[contract.ArgDryRun]
	planRaw, hasPlan := obj[contract.ArgPlanHash]
	if hasDry {
		if c.DryRun == contract.ModeNone {
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgDryRun, Message: "this tool offers no dry run"}
		}
		switch string(dryRaw) {
		case "true":
			a.dryRun = true
		case "false":
		default:
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgDryRun, Message: "must be true or false"}
		}
		delete(obj, contract.ArgDryRun)
	}
	switch {
	case hasKey && c.HasSideEffects():
		if len(keyRaw) == 0 || keyRaw[0] != '"' {
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: "must be a string"}
		}
		if err := json.Unmarshal(keyRaw, &a.key); err != nil {
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: "must be a string"}
		}
		if err := idempotency.ValidKey(a.key); err != nil {
			return err
		}
		delete(obj, contract.ArgIdempotencyKey)
	case c.HasSideEffects() && c.KeyRequired() && !a.dryRun:
		return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: "is required: " + contract.IdempotencyKeyRule + ", naming this call for safe retries"}
	}
	if c.DryRun == contract.ModeMandatory {
		switch {
		case hasPlan:
			var h string
			if len(planRaw) == 0 || planRaw[0] != '"' || json.Unmarshal(planRaw, &h) != nil || !idempotency.ValidPlanHash(h) {
				return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgPlanHash, Message: "must be " + contract.PlanHashRule + ": the planHash a dry run of these arguments answered"}
			}
			if !a.dryRun { // a dry run makes a plan: the one cited is not its
				a.plan = h
			}
			delete(obj, contract.ArgPlanHash)
		case !a.dryRun:
			return &failure.Error{Code: failure.DryRunRequired, Field: contract.ArgPlanHash, Message: "is required: this tool's dry run is mandatory. Call it with dryRun: true first, review what it would do, then call again with the same arguments and the planHash it answered. Nothing was done"}
		}
	}
	if !hasKey && !hasDry && !(hasPlan && c.DryRun == contract.ModeMandatory) {
		return nil // raw is the tool's as it is
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "must be a JSON object", Err: err}
	}
	a.raw = b
	return nil
}

// validateInput checks raw against the input schema (jsonschema-go), for a
// tool whose Decoder is Strict: the schema's constraints (lengths, ranges,
// enums, required members) are checked where the Go type cannot.
func (t *compiled) validateInput(raw []byte) error {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		if _, syntax := err.(*json.SyntaxError); syntax {
			return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "are not well-formed JSON"}
		}
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: canonicalRule} // a number out of range
	}
	if t.input.Validate(v) != nil {
		// jsonschema-go's error quotes the value: it goes nowhere.
		return t.schemaFault(t.Contract.InputSchema, v)
	}
	return nil
}

// callerKey names the caller whose idempotency keys and request states are
// its own: subject, client and acting agent, each length-prefixed, so that
// two agents acting for one person through one client never share a key or
// open each other's confirmations. "" for no caller (refused before any
// step that uses it).
func callerKey(pr *auth.Principal) string {
	if pr == nil {
		return ""
	}
	var b []byte
	for _, s := range []string{pr.Subject, pr.ClientID, pr.Actor} {
		b = strconv.AppendInt(b, int64(len(s)), 10)
		b = append(append(b, ':'), s...)
	}
	return string(b)
}

// maxExactInteger is 2^53: integers beyond it have no exact float64, so RFC
// 8785 (which writes numbers as doubles) would give two of them one
// canonical form — one fingerprint, one request-state binding.
const maxExactInteger = 1 << 53

// exactNumbers refuses a document holding an integer beyond ±2^53 (I-JSON,
// RFC 7493 §2.2), naming it as an argument the caller must correct.
func exactNumbers(doc []byte) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // the end, or a syntax error canonical.Transform reports
		}
		n, ok := tok.(json.Number)
		if !ok || strings.ContainsAny(string(n), ".eE") {
			continue
		}
		if v, err := strconv.ParseInt(string(n), 10, 64); err != nil || v > maxExactInteger || v < -maxExactInteger {
			return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "holds an integer beyond ±2^53, which cannot be compared exactly (I-JSON)"}
		}
	}
}
