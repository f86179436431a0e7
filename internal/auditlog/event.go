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
	"strings"
	"time"
	"unicode/utf8"
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
	// InputRequired: nothing ran; the client was asked for input (a
	// person's confirmation) and may retry with it.
	InputRequired Outcome = "input_required"
	// Replayed: a repeat of an idempotency key's call, answered with the
	// stored response; no new effect.
	Replayed Outcome = "replayed"
	// Unchanged: the call ran and found its effect already made (natural
	// idempotency: the same link; a status already set): no new effect.
	Unchanged Outcome = "unchanged"
	// DryRun: the call said what it would do and changed nothing.
	DryRun Outcome = "dry_run"
	// Incomplete: an action allowed and begun did not finish (a download cut
	// before its last byte); its details say how far it got.
	Incomplete Outcome = "incomplete"
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
)

// MaxFieldBytes bounds each text field of an event (subject, client id...): what the store
// keeps. internal/auth's identity claim limits are held within it by internal/server's tests.
const MaxFieldBytes = 1024

// ErrUnstorable wraps the error for an event the store could never accept, whenever it is
// tried: a missing name, a field too long, a NUL byte or invalid UTF-8 (PostgreSQL refuses
// both in text). Record, Keep and Append refuse such an event up front, so it never reaches
// the spool: for the caller it is a server fault, never "the store is down".
var ErrUnstorable = errors.New("audit event the store cannot accept")

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
	for _, f := range [...]struct{ name, v string }{
		{"name", ev.Name}, {"tool", ev.Tool}, {"risk", ev.Risk}, {"subject", ev.Subject},
		{"actor", ev.Actor}, {"client id", ev.ClientID}, {"acr", ev.ACR}, {"request id", ev.RequestID},
		{"outcome", string(ev.Outcome)}, {"failure code", ev.FailureCode},
		{"args digest", ev.ArgsDigest}, {"result digest", ev.ResultDigest},
	} {
		if err := checkField(f.name, f.v, MaxFieldBytes); err != nil {
			errs = append(errs, err)
		}
	}
	if len(ev.Details) > maxDetails {
		errs = append(errs, fmt.Errorf("more than %d details", maxDetails))
	}
	for k := range ev.Details {
		if k == "" {
			errs = append(errs, errors.New("a detail name is empty"))
		} else if err := checkField("a detail name", k, maxDetailKeyLen); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrUnstorable, err)
	}
	return nil
}

// checkField says why the store could not keep v as the text field name; the message never
// holds v.
func checkField(name, v string, limit int) error {
	if len(v) > limit {
		return fmt.Errorf("%s is longer than %d bytes", name, limit)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL byte", name)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("%s is not valid UTF-8", name)
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
