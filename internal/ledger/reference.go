package ledger

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/store"
)

// The references recorded on invoices (migration 00180): a reminder's PIX
// code carries a txid that names its draft; AddReference records it on
// each of the draft's invoices, and matching treats it as one of their own
// references, so that a payment quoting it pays them. An invoice collects
// several (one per reminder that carried a code); its own, as imported,
// stay as they are.

// SourceReminder is the source of the references a reminder gave: its PIX
// code's txid, recorded with the draft's id.
const SourceReminder = "reminder"

// MaxReferenceLen is the longest reference AddReference records, in
// characters: the longest txid a PIX code may carry (BACEN's manual: 35,
// for dynamic codes; a static code's is at most MaxTxIDLen).
const MaxReferenceLen = 35

// RecordedReference is a reference recorded on an invoice, by what and
// when.
type RecordedReference struct {
	InvoiceID string
	Reference string
	Source    string // SourceReminder
	SourceID  string // the draft's id
	At        time.Time
}

// checkReference holds AddReference's arguments to their rules: the
// reference is text without white space at either end (a payment must
// quote it exactly) of 1 to MaxReferenceLen characters; the source and its
// id follow the ids' rule.
func checkReference(reference, source, sourceID string) *FieldError {
	switch {
	case reference == "":
		return &FieldError{Field: "reference", Code: CodeMissing, Message: "is required"}
	case idProblem(reference) != "":
		return &FieldError{Field: "reference", Code: CodeInvalidText, Message: idProblem(reference)}
	case utf8.RuneCountInString(reference) > MaxReferenceLen:
		return &FieldError{Field: "reference", Code: CodeInvalidFormat, Message: fmt.Sprintf("must be 1 to %d characters", MaxReferenceLen)}
	}
	for _, f := range [][2]string{{"source", source}, {"sourceId", sourceID}} {
		if msg := idProblem(f[1]); msg != "" {
			return &FieldError{Field: f[0], Code: CodeInvalidText, Message: msg}
		}
	}
	return nil
}

// AddReference records reference, given to the customer by source (its id
// sourceID), on each of invoiceIDs the ledger knows, in one statement: ids
// it does not know are ignored (a draft may name invoices supplied by the
// caller), and a reference an invoice has already is left as recorded
// first. A bad argument is invalid_arguments naming it. On PostgreSQL the
// invoices' rows are share-locked (the foreign key) in id order, the
// ledger's lock order.
func AddReference(ctx context.Context, tx store.Tx, invoiceIDs []string, reference, source, sourceID string, now time.Time) error {
	if fe := checkReference(reference, source, sourceID); fe != nil {
		return invalid(fe)
	}
	if len(invoiceIDs) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO ledger_reference (invoice_id, reference, source, source_id, created_at)
 SELECT id, CAST($2 AS text), CAST($3 AS text), CAST($4 AS text), CAST($5 AS bigint) FROM ledger_invoice
 WHERE `+store.InList(tx.Dialect(), "id", "$1")+` ORDER BY id
 ON CONFLICT (invoice_id, reference) DO NOTHING`,
		jsonList(sortedUnique(invoiceIDs)), reference, source, sourceID, now.UnixMicro())
	if err != nil {
		return fmt.Errorf("ledger: add reference: %w", err)
	}
	return nil
}

// RecordedReferences returns the references recorded on the invoice,
// oldest first.
func RecordedReferences(ctx context.Context, q store.Querier, invoiceID string) ([]RecordedReference, error) {
	var out []RecordedReference
	err := scanRows(ctx, q, `SELECT invoice_id, reference, source, source_id, created_at FROM ledger_reference
 WHERE invoice_id = $1 ORDER BY created_at, reference`, []any{invoiceID}, func(r store.Rows) error {
		var ref RecordedReference
		var at int64
		err := r.Scan(&ref.InvoiceID, &ref.Reference, &ref.Source, &ref.SourceID, &at)
		ref.At = micros(at)
		out = append(out, ref)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: recorded references: %w", err)
	}
	return out, nil
}

// recordedSQL reads the invoices that carry the references of the JSON
// list $1 as recorded ones, with the reference: matching's second read.
func recordedSQL(d store.Dialect) string {
	return `SELECT invoice_id, reference FROM ledger_reference WHERE ` + anyOf(d, "reference", "$1")
}
