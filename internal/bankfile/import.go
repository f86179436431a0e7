package bankfile

import (
	"context"
	"errors"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
)

// Import is what an import of a bank file did.
type Import struct {
	Format  Format
	Skipped int // records that are no payment received
	ledger.ImportCounts
}

// Details are n's counts, for its audit event (ledger.EventPaymentsImported).
func (n Import) Details() map[string]int64 {
	return map[string]int64{"read": int64(n.Read), "new": int64(n.New), "duplicate": int64(n.Duplicate),
		"matchedReference": int64(n.MatchedReference), "matchedAmount": int64(n.MatchedAmount), "unmatched": int64(n.Unmatched),
		"allocatedCents": n.AllocatedCents, "creditCents": n.CreditCents, "skipped": int64(n.Skipped)}
}

// Import records and matches f's payments in tx (ledger.ImportPayments) as by: all of them
// or, when the ledger refuses one, none, refused naming its place in the file (its cause a
// *ledger.FileError). A payment the ledger already has changes nothing.
func (f *File) Import(ctx context.Context, tx store.Tx, by ledger.Actor, now time.Time) (Import, error) {
	n, err := ledger.ImportPayments(ctx, tx, f.Payments, by, now)
	if ie, ok := errors.AsType[*ledger.IndexError](err); ok && ie.Index >= 0 && ie.Index < len(f.Places) {
		return Import{}, ledger.RefuseRecord(ie, f.Places[ie.Index].problem())
	}
	if err != nil {
		return Import{}, err
	}
	return Import{Format: f.Format, Skipped: f.Skipped, ImportCounts: n}, nil
}

// Refusal is e as the refusal of an import: nothing imported, every problem listed
// (invalid_arguments, its cause a *ledger.FileError).
func (e *Error) Refusal() *failure.Error {
	fe := &ledger.FileError{Of: e.Format.Name()}
	for _, p := range e.Problems {
		fe.Problems = append(fe.Problems, p.problem())
	}
	return ledger.RefuseFile(failure.InvalidArguments, fe)
}

// problem is the place as an import's problem's.
func (p Place) problem() ledger.Problem {
	return ledger.Problem{Line: p.Line, Transaction: p.Transaction}
}
