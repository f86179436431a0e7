// Package collections holds the collections (accounts receivable) tools:
// each tool's contract together with its logic. internal/pipeline runs
// them; no transport is known here.
package collections

import (
	"bytes"
	"context"
	_ "embed" // the result view
	"errors"
	"fmt"
	"strconv"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/reminders"
)

// AnalyzeName is the name of the read-only analysis tool.
const AnalyzeName = "collections.analyze_portfolio"

// AnalyzeView is the URI of the analysis' result view (an MCP Apps
// resource): analyzeView, a sortable priority table and an aging chart of
// the call's structuredContent, for hosts that render one.
const AnalyzeView = "ui://cobranca/portfolio-analysis.html"

//go:embed analyze_view.html
var analyzeView []byte

// Tools returns the collections tools, contract and logic, in listing order.
func Tools() ([]pipeline.Tool, error) {
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		return nil, err
	}
	var tools []pipeline.Tool
	for _, t := range []struct {
		contract contract.Contract
		logic    pipeline.Tool // all but the contract
	}{
		{analyzeContract(), pipeline.Tool{Decode: analyzeDecode, Run: analyzeRun, FastOutput: true, View: analyzeView}},
		{getCustomerContract(), pipeline.Tool{Decode: getCustomerDecode, Read: getCustomerRead}},
		{listDraftsContract(), pipeline.Tool{Decode: listDraftsDecode, Read: listDrafts}},
		{prepareReminderContract(), pipeline.Tool{Decode: prepareReminderDecode, Execute: prepareReminderExecute(tpl)}},
		{setContactStatusContract(), pipeline.Tool{Decode: setContactStatusDecode, Preview: setContactStatusPreview, Execute: setContactStatusExecute}},
		{getBulkSendContract(), pipeline.Tool{Decode: pipeline.Strict[getBulkSendArgs](), Read: getBulkSendRead}},
		// Forbidden: never served over MCP; the pipeline's Admin runs it for people.
		{writeOffContract(), pipeline.Tool{Decode: writeOffDecode, Execute: writeOffExecute}},
	} {
		c, err := contract.Finish(t.contract)
		if err != nil {
			return nil, err
		}
		t.logic.Contract = c
		tools = append(tools, t.logic)
	}
	return tools, nil
}

// analyzeContract is the Tool Contract of collections.analyze_portfolio.
func analyzeContract() contract.Contract {
	return contract.Contract{
		Name:  AnalyzeName,
		Title: "Analyze collections portfolio",
		Description: "Use when a finance operator explicitly provides a small invoice portfolio (1 to " +
			strconv.Itoa(portfolio.MaxInvoices) + " invoices) and wants a read-only, explainable collection priority queue. " +
			"It only analyzes the supplied invoices; it never sends messages, accesses a CRM, changes records, " +
			"or makes payment decisions. Customers with any doNotContact invoice are left out entirely.",
		Category:     "collections",
		RiskLevel:    contract.Low,
		InputSchema:  analyzeInputSchema(),
		OutputSchema: analyzeOutputSchema(),
		Permissions:  []string{"collections:read"},
		SideEffects: contract.SideEffects{
			Changes:  []string{},
			OnRepeat: "The same arguments always give the same result; nothing is stored, the portfolio is never persisted.",
		},
		AuditEvent: "collections.portfolio.analyzed",
		FailureModes: []contract.FailureMode{
			{Code: failure.Code(portfolio.CodeInvalidJSON), Meaning: "The arguments are not a well-formed JSON object."},
			{Code: failure.Code(portfolio.CodeUnknownField), Meaning: "An argument field is not part of the input schema; field names it."},
			{Code: failure.Code(portfolio.CodeMissingField), Meaning: "A required field is absent; field names it."},
			{Code: failure.Code(portfolio.CodeInvalidType), Meaning: "A field has the wrong JSON type (amountCents must be an integer); field names it."},
			{Code: failure.Code(portfolio.CodeInvalidFormat), Meaning: "A date is not written YYYY-MM-DD."},
			{Code: failure.Code(portfolio.CodeInvalidDate), Meaning: "A date is well formed but not a real calendar date (2025-02-30)."},
			{Code: failure.Code(portfolio.CodeOutOfRange), Meaning: "A date lies outside " + portfolio.MinDate + ".." + portfolio.MaxDate + ", an amount outside 1.." + strconv.FormatInt(portfolio.MaxAmountCents, 10) + " cents, or the invoice count outside 1.." + strconv.Itoa(portfolio.MaxInvoices) + "."},
			{Code: failure.Code(portfolio.CodeInvalidValue), Meaning: "status is not one of open, paid, void."},
			{Code: failure.Code(portfolio.CodeInvalidText), Meaning: "An id or name is empty or blank (only white space or invisible characters), longer than " + strconv.Itoa(portfolio.MaxTextLen) + " characters, not UTF-8, or holds a control character or one that can hide or reorder text (zero-width, bidirectional control, tag, line or paragraph separator); field names it."},
			{Code: failure.Code(portfolio.CodeDuplicateInvoiceID), Meaning: "Two invoices share an id; field names the second."},
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only and deterministic: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
		View:        AnalyzeView,
	}
}

// analyzeDecode decodes and validates the arguments object at the start of
// b. Invalid arguments never reach portfolio.Analyze: ParsePrefix returns no
// Input for them.
func analyzeDecode(b []byte) (any, int, error) {
	if a := bytes.TrimSpace(b); len(a) == 0 || bytes.Equal(a, []byte("null")) {
		return nil, 0, &failure.Error{Code: failure.Code(portfolio.CodeMissingField), Field: "arguments", Message: "is required: an object {asOf, invoices}"}
	}
	in, n, err := portfolio.ParsePrefix(b)
	if err != nil {
		var pe *portfolio.Error
		if errors.As(err, &pe) {
			return nil, 0, &failure.Error{Code: failure.Code(pe.Code), Field: pe.Field, Message: pe.Message}
		}
		return nil, 0, fmt.Errorf("parse portfolio: %w", err)
	}
	return in, n, nil
}

// analyzeRun runs the pure core on arguments analyzeDecode accepted.
func analyzeRun(_ context.Context, v any) (pipeline.Effect, error) {
	in := v.(*portfolio.Input)
	a := portfolio.Analyze(in)
	summary := fmt.Sprintf("Portfolio analyzed: %d priority account(s) from %d invoice(s); no external action taken.",
		len(a.Accounts), len(in.Invoices))
	details := map[string]int64{"invoiceCount": int64(len(in.Invoices)), "accountCount": int64(len(a.Accounts))}
	if n := len(a.Warnings); n > 0 {
		summary += fmt.Sprintf(" %d warning(s): see warnings.", n)
		details["warningCount"] = int64(n)
	}
	return pipeline.Effect{
		Structured:          &a,
		Summary:             summary,
		Details:             details,
		AppendCanonicalArgs: in.AppendCanonicalJSON,
	}, nil
}
