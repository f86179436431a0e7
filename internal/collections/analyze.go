// Package collections holds the collections (accounts receivable) tools:
// each tool's contract together with its logic. internal/pipeline runs
// them; no transport is known here.
package collections

import (
	"bytes"
	"context"
	_ "embed" // the result view
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/value"
)

// AnalyzeName is the name of the read-only analysis tool.
const AnalyzeName = "collections.analyze_portfolio"

// Settings are the server's settings of the collections tools: the
// operator's, from the configuration, never the caller's.
type Settings struct {
	// ContactPacing is the least time between two contacts of one customer
	// (COBRANCA_CONTACT_PACING): analyze_portfolio annotates an account
	// contacted more recently with nextContactAfter. 0: no pacing.
	ContactPacing time.Duration
	// LedgerRequired (COBRANCA_LEDGER_REQUIRED): a reminder may name only invoices the
	// receivables ledger knows; prepare_reminder refuses another, and the sends refuse (or a
	// bulk skips) a draft naming one, whose payment could not be checked.
	LedgerRequired bool
	// Pix is the operator's PIX receiving account (COBRANCA_PIX_*): with it, a reminder in BRL
	// carries a BR Code for its open amount. nil: no PIX codes.
	Pix *pix.Merchant
}

// AnalyzeView is the URI of the analysis' result view (an MCP Apps
// resource): analyzeView, a sortable priority table and an aging chart of
// the call's structuredContent, for hosts that render one.
const AnalyzeView = "ui://cobranca/portfolio-analysis.html"

//go:embed analyze_view.html
var analyzeViewPage []byte

// analyzeView is the page with portfolio's minor units in it, so that it
// shows amounts in the units the result is in, whatever Intl's CLDR data
// says of a currency.
var analyzeView = func() []byte {
	units := map[string]int{}
	for _, code := range value.Currencies() {
		units[code], _ = value.MinorUnits(code)
	}
	table, err := json.Marshal(units) // keys sorted: the page is the same on every start
	if err != nil {
		panic(err)
	}
	const mark = "{/*minor units*/}"
	if bytes.Count(analyzeViewPage, []byte(mark)) != 1 {
		panic("collections: analyze_view.html lacks its minor units mark")
	}
	return bytes.Replace(analyzeViewPage, []byte(mark), table, 1)
}()

// Tools returns the collections tools, contract and logic, in listing order.
func Tools(s Settings) ([]pipeline.Tool, error) {
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		return nil, err
	}
	cs, err := finishedContracts()
	if err != nil {
		return nil, err
	}
	var tools []pipeline.Tool
	for i, t := range toolTable(s, tpl) {
		t.logic.Contract = cs[i]
		tools = append(tools, t.logic)
	}
	return tools, nil
}

// toolDecl is one tool of toolTable: its contract's declaration and its logic.
type toolDecl struct {
	contract func() contract.Contract
	logic    pipeline.Tool // all but the contract
}

// toolTable lists the collections tools, in listing order, their logic under s and tpl.
func toolTable(s Settings, tpl *reminders.Templates) []toolDecl {
	return append([]toolDecl{
		{analyzeContract, pipeline.Tool{Decode: analyzeDecode, Run: analyzeRun(portfolio.Options{ContactPacing: s.ContactPacing}), FastOutput: true, View: analyzeView}},
		{getCustomerContract, pipeline.Tool{Decode: getCustomerDecode, Read: getCustomerRead}},
		{listDraftsContract, pipeline.Tool{Decode: listDraftsDecode, Read: listDrafts}},
		{prepareReminderContract, pipeline.Tool{Decode: prepareReminderDecode, Execute: prepareReminderExecute(tpl, s)}},
		{setContactStatusContract, pipeline.Tool{Decode: setContactStatusDecode, Preview: setContactStatusPreview, Execute: setContactStatusExecute}},
		{getBulkSendContract, pipeline.Tool{Decode: pipeline.Strict[getBulkSendArgs](), Read: getBulkSendRead}},
		// The ledger's reads (ledger_read*.go).
		{getInvoiceContract, pipeline.Tool{Decode: getInvoiceDecode, Read: getInvoiceRead}},
		{listInvoicesContract, pipeline.Tool{Decode: listInvoicesDecode, Read: listInvoicesRead}},
		{listUnmatchedContract, pipeline.Tool{Decode: listUnmatchedDecode, Read: listUnmatchedRead}},
		{analyzeLedgerContract, pipeline.Tool{Decode: analyzeLedgerDecode, Read: analyzeLedgerRead(portfolio.Options{ContactPacing: s.ContactPacing})}},
		// The ledger's writes (ledger_write*.go).
		{recordInvoicesContract, pipeline.Tool{Decode: recordInvoicesDecode, Execute: recordInvoicesExecute}},
		{recordPaymentContract, pipeline.Tool{Decode: recordPaymentDecode, Preview: recordPaymentPreview, Execute: recordPaymentExecute}},
		{matchPaymentContract, pipeline.Tool{Decode: matchPaymentDecode, Preview: matchPaymentPreview, Execute: matchPaymentExecute}},
		{recordPromiseContract, pipeline.Tool{Decode: recordPromiseDecode, Execute: recordPromiseExecute}},
		{openDisputeContract, pipeline.Tool{Decode: openDisputeDecode, Execute: openDisputeExecute}},
		{resolveDisputeContract, pipeline.Tool{Decode: resolveDisputeDecode, Execute: resolveDisputeExecute}},
		// Forbidden: never served over MCP; the pipeline's Admin runs it for people.
		{writeOffContract, pipeline.Tool{Decode: writeOffDecode, Execute: writeOffExecute}},
	}, scheduleTools()...) // the collection schedules' (schedule.go)
}

// finishedContracts are toolTable's contracts, finished, in its order: made once per
// process, since they do not depend on the settings, and since a pipeline compiles a
// contract's schemas once per schema (pipeline.New): a process that builds the tools again
// (a test's server, a replica) then compiles nothing again. Nothing changes a finished
// contract.
var finishedContracts = sync.OnceValues(func() ([]*contract.Contract, error) {
	var cs []*contract.Contract
	for _, t := range toolTable(Settings{}, nil) {
		c, err := contract.Finish(t.contract())
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	return cs, nil
})

// analyzeContract is the Tool Contract of collections.analyze_portfolio.
func analyzeContract() contract.Contract {
	return contract.Contract{
		Name:            AnalyzeName,
		ContractVersion: "1.1.0",
		Title:           "Analyze collections portfolio",
		Description: "Use when a finance operator explicitly provides a small invoice portfolio (1 to " +
			strconv.Itoa(portfolio.MaxInvoices) + " invoices) and wants a read-only, explainable collection priority queue. " +
			"It only analyzes the supplied invoices; it never sends messages, accesses a CRM, changes records, " +
			"or makes payment decisions. Customers with any doNotContact invoice are left out entirely. " +
			"Optionally it converts invoices in other currencies at the rates given, keeps disputed invoices and pending promises to pay out of the queue, " +
			"raises broken promises, and says when the server's contact pacing allows the next contact; summary gives aging buckets and what was left out, as counts.",
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
			{Code: failure.Code(portfolio.CodeInvalidFormat), Meaning: "A date is not written YYYY-MM-DD, or a lastContactedAt is neither an RFC 3339 date-time with an offset nor such a date."},
			{Code: failure.Code(portfolio.CodeInvalidDate), Meaning: "A date is well formed but not a real calendar date (2025-02-30)."},
			{Code: failure.Code(portfolio.CodeOutOfRange), Meaning: "A date lies outside " + value.MinDate + ".." + value.MaxDate + ", an amount outside 1.." + strconv.FormatInt(value.MaxAmountCents, 10) + " cents (also once converted to baseCurrency), a rate not above 0 or above " + strconv.Itoa(portfolio.MaxRate) + ", the invoice count outside 1.." + strconv.Itoa(portfolio.MaxInvoices) + ", more than " + strconv.Itoa(portfolio.MaxRates) + " rates or " + strconv.Itoa(portfolio.MaxInvoices) + " customers entries."},
			{Code: failure.Code(portfolio.CodeInvalidValue), Meaning: "status is not one of open, paid, void; a currency is not an active ISO 4217 code; a rate is for baseCurrency itself or has more than " + strconv.Itoa(portfolio.MaxRateScale) + " decimal places or " + strconv.Itoa(portfolio.MaxRateSignifics) + " significant digits; disputeReason comes without disputed: true. field names it."},
			{Code: failure.Code(portfolio.CodeInvalidText), Meaning: "An id, name, disputeReason or customers entry's customerId is empty or blank (only white space or invisible characters), longer than " + strconv.Itoa(value.MaxTextLen) + " characters, not UTF-8, or holds a control character or one that can hide or reorder text (zero-width, bidirectional control, tag, line or paragraph separator); field names it."},
			{Code: failure.Code(portfolio.CodeDuplicateInvoiceID), Meaning: "Two invoices share an id; field names the second."},
			{Code: failure.Code(portfolio.CodeMissingRate), Meaning: "An invoice is in a currency other than baseCurrency and rates has no rate for it; field names the invoice's currency, the message the code."},
			{Code: failure.Code(portfolio.CodeDuplicateEntry), Meaning: "Two rates share a currency, or two customers entries a customerId; field names the second."},
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

// analyzeRun runs the pure core, under the server's options, on arguments
// analyzeDecode accepted.
func analyzeRun(o portfolio.Options) func(context.Context, any) (pipeline.Effect, error) {
	return func(_ context.Context, v any) (pipeline.Effect, error) {
		return analyzeEffect(v.(*portfolio.Input), o), nil
	}
}

func analyzeEffect(in *portfolio.Input, o portfolio.Options) pipeline.Effect {
	a := portfolio.AnalyzeWith(in, o)
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
		Done:                in.Release, // the invoice array goes back to Parse's pool; the result holds none of it
	}
}
