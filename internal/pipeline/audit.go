package pipeline

import (
	"context"
	"encoding/json"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/buffers"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// CallRecord is what the pipeline knows about a finished call; the Auditor
// turns it into an audit event.
type CallRecord struct {
	Contract  *contract.Contract
	Principal *auth.Principal
	RequestID string
	Outcome   auditlog.Outcome
	Code      failure.Code
	Args      json.RawMessage // to digest, never to store
	// AppendCanonicalArgs, when set, writes Args in canonical form
	// (Effect.AppendCanonicalArgs).
	AppendCanonicalArgs func([]byte) []byte
	Result              []byte // the structured result as sent, to digest
	Details             map[string]int64
	Duration            time.Duration
}

// Auditor records one audit event per tool call, whatever its outcome.
type Auditor interface {
	// RecordCall writes the event on its own: group-committed, through the
	// spool while the store is down, for a read; at once for a tool with
	// side effects.
	RecordCall(ctx context.Context, rec CallRecord) error
	// AppendCall writes the event in tx, the transaction of the call's
	// effect: both commit, or neither. It may defer the write to the commit
	// (store.Tx.Defer), where a failure comes back from the transaction as
	// an audit failure.
	AppendCall(ctx context.Context, tx store.Tx, rec CallRecord) error
}

// auditWriteTimeout bounds writing one audit event. The write does not follow the request's
// cancellation: a call whose client went away still gets its event.
const auditWriteTimeout = 5 * time.Second

// NewAuditor returns the Auditor that writes one auditlog event per tool call: who called
// (from the verified token), which tool and tier, how it ended, HMAC digests of the arguments
// and of the result, and the tool's integer counts. Never the arguments themselves.
func NewAuditor(log *auditlog.Log, digest *auditlog.Digester) Auditor {
	return &auditor{log: log, digest: digest}
}

type auditor struct {
	log    *auditlog.Log
	digest *auditlog.Digester
}

func (a *auditor) event(rec CallRecord) auditlog.Event {
	ev := auditlog.Event{
		Name:        rec.Contract.AuditEvent,
		Tool:        rec.Contract.Name,
		Risk:        string(rec.Contract.RiskLevel),
		RequestID:   rec.RequestID,
		Outcome:     rec.Outcome,
		FailureCode: string(rec.Code),
		Duration:    max(rec.Duration, 0),
		Details:     rec.Details,
	}
	Caller(rec.Principal, &ev)
	if rec.AppendCanonicalArgs != nil {
		p := buffers.Get(len(rec.Args) + 64) // canonical is about as long as compact input
		b := rec.AppendCanonicalArgs(*p)
		ev.ArgsDigest = a.digest.Bytes(b)
		buffers.Put(p, b)
	} else if len(rec.Args) > 0 {
		d, err := a.digest.JSON(rec.Args)
		if err != nil { // arguments that are not JSON were refused; digest them as sent
			d = a.digest.Bytes(rec.Args)
		}
		ev.ArgsDigest = d
	}
	if len(rec.Result) > 0 {
		ev.ResultDigest = a.digest.Bytes(rec.Result)
	}
	return ev
}

func (a *auditor) RecordCall(ctx context.Context, rec CallRecord) error {
	ev := a.event(rec)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), auditWriteTimeout)
	defer cancel()
	if rec.Contract.HasSideEffects() {
		// The pipeline fails such a call closed when its event cannot be written now.
		return a.log.Record(ctx, ev)
	}
	// A call that changes nothing is answered whatever happens to its event: while the
	// store is down the event waits in the spool.
	return a.log.Keep(ctx, ev)
}

// AppendCall defers the event's INSERT to the commit, which sends it in the
// same round trip.
func (a *auditor) AppendCall(_ context.Context, tx store.Tx, rec CallRecord) error {
	s, err := a.log.AppendStmt(a.event(rec))
	if err != nil {
		return err
	}
	s.Fail = auditFailed
	tx.Defer(s)
	return nil
}

// Caller fills ev's caller fields from p, if any: the one place an audit
// event learns who called.
func Caller(p *auth.Principal, ev *auditlog.Event) {
	if p != nil {
		ev.Subject, ev.Actor, ev.ClientID, ev.ACR = p.Subject, p.Actor, p.ClientID, p.ACR
	}
}
