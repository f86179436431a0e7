package collections

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// GetBulkSendName is the name of the read of a bulk send's progress.
const GetBulkSendName = "collections.get_bulk_send"

const argBulkID = "bulkId"

func getBulkSendContract() contract.Contract {
	return contract.Contract{
		Name:            GetBulkSendName,
		ContractVersion: "1.0.0",
		Title:           "Get a bulk send's progress",
		Description: "Use after collections.bulk_send_reminders queued a bulk send (its bulkId) to see how delivery goes: how many of its " +
			"messages are still queued, were sent (accepted by the mail server) or failed (refused for good: the draft is undeliverable). " +
			"Read-only.",
		Category:     "communication",
		RiskLevel:    contract.Low,
		InputSchema:  getBulkSendInputSchema(),
		OutputSchema: getBulkSendOutputSchema(),
		Permissions:  []string{"collections:read"},
		SideEffects: contract.SideEffects{
			Changes:  []string{},
			OnRepeat: "Nothing changes; a repeat reports the counts as they are then.",
		},
		AuditEvent: "collections.bulk_send.read",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema (bulkId is not a bulk send id); field names it."},
			{Code: reminders.CodeBulkNotFound, Meaning: "No bulk send has this bulkId (field bulkId)."},
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
	}
}

type getBulkSendArgs struct {
	BulkID string `json:"bulkId"`
}

// bulkProgress is get_bulk_send's answer.
type bulkProgress struct {
	BulkID    string `json:"bulkId"`
	CreatedAt string `json:"createdAt"`
	Total     int    `json:"total"`
	Queued    int    `json:"queued"`
	Sent      int    `json:"sent"`
	Failed    int    `json:"failed"`
	Skipped   int    `json:"skipped"`
	Done      bool   `json:"done"`
}

func getBulkSendRead(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	a := v.(*getBulkSendArgs)
	s, err := reminders.GetBulk(ctx, q, a.BulkID)
	if errors.Is(err, reminders.ErrBulkNotFound) {
		return pipeline.Effect{}, &failure.Error{Code: reminders.CodeBulkNotFound, Field: argBulkID, Message: "names no bulk send", Err: err}
	}
	if err != nil {
		return pipeline.Effect{}, err
	}
	out := &bulkProgress{BulkID: s.ID, CreatedAt: s.CreatedAt.Format(time.RFC3339Nano), Total: s.Total,
		Queued: s.Queued, Sent: s.Sent, Failed: s.Undeliverable, Skipped: s.Skipped, Done: s.Queued == 0}
	return pipeline.Effect{
		Structured: out,
		Summary:    fmt.Sprintf("Bulk send of %d messages: %d queued, %d sent, %d failed.", s.Total, s.Queued, s.Sent, s.Undeliverable),
		Details:    map[string]int64{"total": int64(s.Total), "queued": int64(s.Queued), "sent": int64(s.Sent), "failed": int64(s.Undeliverable)},
	}, nil
}

func getBulkSendInputSchema() *jsonschema.Schema {
	s := mustFor[getBulkSendArgs]()
	closeObject(s)
	s.Description = "The bulk send to report on."
	bulkIDRules(s.Properties[argBulkID])
	s.Properties[argBulkID].Description = "The bulk send, as bulk_send_reminders returned it (bulkId). " + s.Properties[argBulkID].Description
	return s
}

// bulkIDRules describes a bulk send's id.
func bulkIDRules(s *jsonschema.Schema) {
	s.Pattern = ident.Pattern(reminders.BulkIDPrefix)
	s.Description = "Bulk send id: " + ident.Describe(reminders.BulkIDPrefix) + "."
}

func getBulkSendOutputSchema() *jsonschema.Schema {
	s := mustFor[bulkProgress]()
	closeObject(s)
	s.Description = "Where a bulk send's messages are: total = queued + sent + failed."
	p := s.Properties
	bulkIDRules(p["bulkId"])
	p["createdAt"].Format = "date-time"
	p["createdAt"].Description = "When the bulk send was queued (RFC 3339, UTC)."
	for name, what := range map[string]string{
		"total":   "messages the bulk send queued",
		"queued":  "of them still in the outbox (being delivered, or waiting to retry a transient failure)",
		"sent":    "of them the mail server accepted",
		"failed":  "of them the mail server refused for good (their drafts are undeliverable; list_drafts says why)",
		"skipped": "drafts of the selection the bulk send skipped (not open, do_not_contact, paused, suppressed address)",
	} {
		p[name].Minimum = ptr(0.0)
		p[name].Description = "How many " + what + "."
	}
	p["total"].Minimum = ptr(1.0)
	p["done"].Description = "true once no message is still queued: each was sent or failed."
	return s
}
