package pipeline

import (
	"bytes"
	"encoding/json"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
)

// control takes the arguments the pipeline reads itself (idempotencyKey,
// dryRun) out of raw, checks them, and leaves in a.raw what the tool reads.
func (a *args) control(c *contract.Contract, raw []byte) error {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "must be a JSON object"}
	}
	if dec.More() {
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "must be one JSON object"}
	}
	_, hasKey := obj[contract.ArgIdempotencyKey]
	_, hasDry := obj[contract.ArgDryRun]
	if v, ok := obj[contract.ArgIdempotencyKey]; ok && c.HasSideEffects() {
		if err := json.Unmarshal(v, &a.key); err != nil {
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: "must be a string"}
		}
		if err := idempotency.ValidKey(a.key); err != nil {
			// One code for every argument the caller must correct.
			msg := err.Error()
			if fe, ok := failure.As(err); ok {
				msg = fe.Message
			}
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: msg}
		}
		delete(obj, contract.ArgIdempotencyKey)
	} else if c.HasSideEffects() && c.KeyRequired() {
		return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgIdempotencyKey, Message: "is required: 1 to 255 printable characters naming this call for safe retries"}
	}
	if v, ok := obj[contract.ArgDryRun]; ok && c.DryRun != contract.ModeNone {
		if err := json.Unmarshal(v, &a.dryRun); err != nil {
			return &failure.Error{Code: failure.InvalidArguments, Field: contract.ArgDryRun, Message: "must be a boolean"}
		}
		delete(obj, contract.ArgDryRun)
	}
	if !hasKey && !hasDry {
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
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: "are not well-formed JSON"}
	}
	if err := t.input.Validate(v); err != nil {
		return &failure.Error{Code: failure.InvalidArguments, Field: "arguments", Message: err.Error()}
	}
	return nil
}
