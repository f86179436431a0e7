// Package auditlog is cobranca's tamper-evident audit log: one event per tool call (allowed,
// denied, failed or rate limited) and, later, per approval and admin action, written as data
// in the store, inside the transaction of the change it records.
//
// Events hold who, what, when and how it ended, with keyed digests of the arguments and the
// result and a few counts: never a payload, a name or an e-mail address.
//
// Appending takes no lock shared between writers. A single sealer (Seal, RunSealer) gives each
// committed event its place in a SHA-256 hash chain, in commit order: on PostgreSQL it seals
// only events whose inserting transaction is older than every transaction still running
// (pg_snapshot_xmin), so an event can never commit "before" one already sealed; on SQLite,
// where writers are serialized, row id order is commit order. Verify walks the chain and names
// the first altered, missing, inserted or reordered event; signed checkpoints (Checkpoint)
// kept off the box expose a chain rebuilt from scratch.
package auditlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Outcome is how the audited action ended.
type Outcome string

// Outcomes of tool calls.
const (
	Allowed     Outcome = "allowed"      // the call ran and succeeded
	Rejected    Outcome = "rejected"     // the arguments were refused
	Denied      Outcome = "denied"       // policy refused the caller
	RateLimited Outcome = "rate_limited" // over a budget
	Failed      Outcome = "failed"       // the server failed
)

// Event is one audit event.
type Event struct {
	// Seq is the event's place in the hash chain: 0 until sealed. Set by the log.
	Seq int64
	// Time is when the event was written: the database clock on PostgreSQL, the log's clock
	// on SQLite. Set by the log; microsecond precision.
	Time time.Time
	// ServerTime is the server's clock when it made the event: the time of the call, also for
	// an event kept in the spool while the store was down and written later. Set by the log;
	// microsecond precision; covered by the event's MAC. Zero for events written before MACs.
	ServerTime time.Time

	Name        string  // the contract's audit event, e.g. "collections.portfolio.analyzed"
	Tool        string  // the tool called
	Risk        string  // the tool's risk tier
	Subject     string  // on whose behalf (the token's subject)
	Actor       string  // the agent acting, when one is (the token's act claim)
	ClientID    string  // the OAuth client
	ACR         string  // the authentication context class of the token
	RequestID   string  // the request, as in the access log
	Outcome     Outcome // how it ended
	FailureCode string  // the failure code when it did not succeed

	ArgsDigest   string // Digester.JSON of the arguments
	ResultDigest string // Digester.Bytes of the result as sent

	Duration time.Duration // microsecond precision
	// Details are a few named counts (e.g. invoiceCount). Integers only, by design: no
	// names, e-mails or payload can end up here.
	Details map[string]int64
}

// Limits on an event's details.
const (
	maxDetails      = 32
	maxDetailKeyLen = 64
	maxFieldLen     = 1024
)

func (ev *Event) validate() error {
	var errs []error
	if ev.Name == "" {
		errs = append(errs, errors.New("event name is required"))
	}
	if ev.Outcome == "" {
		errs = append(errs, errors.New("outcome is required"))
	}
	if ev.Duration < 0 {
		errs = append(errs, errors.New("duration is negative"))
	}
	for name, v := range map[string]string{
		"name": ev.Name, "tool": ev.Tool, "risk": ev.Risk, "subject": ev.Subject, "actor": ev.Actor,
		"client id": ev.ClientID, "acr": ev.ACR, "request id": ev.RequestID, "outcome": string(ev.Outcome),
		"failure code": ev.FailureCode, "args digest": ev.ArgsDigest, "result digest": ev.ResultDigest,
	} {
		if len(v) > maxFieldLen {
			errs = append(errs, fmt.Errorf("%s is longer than %d bytes", name, maxFieldLen))
		}
	}
	if len(ev.Details) > maxDetails {
		errs = append(errs, fmt.Errorf("more than %d details", maxDetails))
	}
	for k := range ev.Details {
		if k == "" || len(k) > maxDetailKeyLen {
			errs = append(errs, fmt.Errorf("detail name %q: want 1 to %d bytes", k, maxDetailKeyLen))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit event: %w", err)
	}
	return nil
}

// detailsJSON is the canonical JSON of the details: keys sorted (encoding/json sorts map
// keys), no spaces, "{}" when empty.
func detailsJSON(d map[string]int64) string {
	if len(d) == 0 {
		return "{}"
	}
	b, err := json.Marshal(d)
	if err != nil {
		panic(err) // a map[string]int64 always marshals
	}
	return string(b)
}

func parseDetails(s string) (map[string]int64, error) {
	var d map[string]int64
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return nil, fmt.Errorf("details: %w", err)
	}
	if len(d) == 0 {
		return nil, nil
	}
	return d, nil
}
