package bankfile

import (
	"fmt"
	"io"

	"github.com/cobranca/cobranca/internal/ledger"
)

// Columns are the CSV of payments' columns, PaymentRecord's JSON names but
// for id, the payment's identity in the system the file comes from.
var Columns = []string{"id", "amountCents", "currency", "paidOn", "method", "reference", "customerId", "payer"}

var requiredColumns = []string{"id", "amountCents", "paidOn"}

// csvFields names PaymentRecord's fields as the file's columns.
var csvFields = map[string]string{"sourceRef": "id"}

// MaxCSVBytes bounds a CSV of payments: 100 000 payments with every
// column filled are far below it.
const MaxCSVBytes = 64 << 20

func readCSV(r io.Reader, label string) (*File, error) {
	lr := &io.LimitedReader{R: r, N: MaxCSVBytes + 1}
	f, err := readCSVRows(lr, label)
	if lr.N <= 0 { // what was read is cut short: its problems are not the file's
		return nil, &Error{Format: CSV, Problems: []Problem{{Code: ledger.CodeTooMany,
			Message: fmt.Sprintf("the file is larger than %d bytes; split it", MaxCSVBytes)}}}
	}
	return f, err
}

func readCSVRows(r io.Reader, label string) (*File, error) {
	source := "csv"
	if label != "" {
		source += ":" + label
	}
	ps := problems{format: CSV}
	t, errs := ledger.OpenCSV(r, Columns, requiredColumns)
	for _, e := range errs {
		ps.add(rowProblem(e))
	}
	if len(errs) > 0 {
		return nil, ps.err()
	}
	out := &File{Format: CSV}
	seen := make(map[string]int) // an id → its first line
	for !ps.full() {
		row, line, rerr, stop := t.Next()
		if rerr != nil {
			ps.add(rowProblem(rerr))
			if stop {
				break
			}
			continue
		}
		if row == nil {
			break
		}
		at := Problem{Place: Place{Line: line}}
		if len(out.Payments) == MaxPayments {
			ps.add(tooMany(at))
			break
		}
		cell := func(name string) string { return t.Cell(row, name) }
		p := ledger.PaymentRecord{
			Source:     source,
			SourceRef:  cell("id"),
			Currency:   cell("currency"),
			PaidOn:     cell("paidOn"),
			Method:     ledger.Method(cell("method")),
			Reference:  cell("reference"),
			CustomerID: cell("customerId"),
			Payer:      cell("payer"),
		}
		if p.Method == "" {
			p.Method = ledger.MethodOther
		}
		n, ok := ledger.Cents(cell("amountCents"))
		if !ok {
			at.Field, at.Code, at.Message = "amountCents", ledger.CodeInvalidFormat, "must be a whole number of minor units, digits only"
			ps.add(at)
			continue
		}
		p.AmountCents = n
		if !validate(&ps, &p, at, csvFields) {
			continue
		}
		if first, dup := seen[p.SourceRef]; dup {
			at.Field, at.Code, at.Message = "id", ledger.CodeDuplicate, fmt.Sprintf("repeats the payment of line %d", first)
			ps.add(at)
			continue
		}
		seen[p.SourceRef] = line
		out.Payments = append(out.Payments, p)
		out.Places = append(out.Places, at.Place)
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

func rowProblem(e *ledger.RowError) Problem {
	return Problem{Place: Place{Line: e.Line}, Field: e.Column, Code: e.Code, Message: e.Message}
}
