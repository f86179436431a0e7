package bankfile

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/cnab"
	"github.com/cobranca/cobranca/internal/ledger"
)

// The CNAB fields a payment's problems are reported at, by segment: T is a
// title's line, U the next one.
var (
	cnabOurNumber = "nosso número (T 38-57)"
	cnabCurrency  = "código da moeda (T 131-132)"
	cnabPayer     = "nome do pagador (T 149-188)"
	cnabPaid      = "valor pago (U 78-92)"
	cnabOccurred  = "data da ocorrência (U 138-145)"

	// cnabFields names PaymentRecord's fields as the layout does, and the
	// segment they are read from.
	cnabFields = map[string]string{"reference": cnabOurNumber, "sourceRef": cnabOurNumber, "currency": cnabCurrency,
		"payer": cnabPayer, "amountCents": cnabPaid, "paidOn": cnabOccurred}
	cnabOnU = map[string]bool{cnabPaid: true, cnabOccurred: true}
)

// cnabReal is the layout's code of the real, the one currency read.
const cnabReal = "09"

func readCNAB(r io.Reader) (*File, error) {
	f, err := cnab.Read(r)
	if err != nil {
		var es cnab.Errors
		if !errors.As(err, &es) {
			return nil, err
		}
		ps := problems{format: CNAB240}
		for _, e := range es {
			ps.add(Problem{Place: Place{Line: e.Line}, Field: e.Field, Code: ledger.CodeInvalidFormat, Message: e.Reason})
		}
		return nil, ps.err()
	}
	out := &File{Format: CNAB240}
	ps := problems{format: CNAB240}
	source := "cnab240:" + f.Bank
	seen := make(map[string]int) // a settlement's identity → how many times the file has it
	for _, b := range f.Batches {
		for _, t := range b.Titles {
			if !t.Settled() {
				out.Skipped++
				continue
			}
			if len(out.Payments) == MaxPayments {
				ps.add(tooMany(Problem{Place: Place{Line: t.Line}}))
				return nil, ps.err()
			}
			p, ok := cnabPayment(&ps, source, t)
			if !ok {
				if ps.full() {
					return nil, ps.err()
				}
				continue
			}
			key := p.SourceRef
			seen[key]++
			if n := seen[key]; n > 1 {
				p.SourceRef += "#" + strconv.Itoa(n)
			}
			at := Problem{Place: Place{Line: t.Line}}
			if !validate(&ps, &p, at, cnabFields) {
				if last := &ps.list[len(ps.list)-1]; cnabOnU[last.Field] {
					last.Line = t.Line + 1
				}
				if ps.full() {
					return nil, ps.err()
				}
				continue
			}
			out.Payments = append(out.Payments, p)
			out.Places = append(out.Places, at.Place)
		}
	}
	if err := ps.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// cnabPayment is the payment a settled title reports, or its problem.
func cnabPayment(ps *problems, source string, t cnab.Title) (ledger.PaymentRecord, bool) {
	u := t.Line + 1 // the reader keeps a segment U right after its T
	switch {
	case t.PaidCents <= 0:
		ps.add(Problem{Place: Place{Line: u}, Field: cnabPaid, Code: ledger.CodeOutOfRange, Message: "a settled title must have the amount paid"})
		return ledger.PaymentRecord{}, false
	case t.OccurredOn == "" && t.CreditedOn == "":
		ps.add(Problem{Place: Place{Line: u}, Field: cnabOccurred, Code: ledger.CodeMissing, Message: "a settled title must have the date it was paid (or credited)"})
		return ledger.PaymentRecord{}, false
	case t.OurNumber == "":
		ps.add(Problem{Place: Place{Line: t.Line}, Field: cnabOurNumber, Code: ledger.CodeMissing, Message: "a settled title must have its nosso número"})
		return ledger.PaymentRecord{}, false
	case t.Currency != "" && t.Currency != cnabReal:
		ps.add(Problem{Place: Place{Line: t.Line}, Field: cnabCurrency, Code: ledger.CodeInvalidValue, Message: fmt.Sprintf("only %s, the real, is read", cnabReal)})
		return ledger.PaymentRecord{}, false
	}
	paidOn := t.OccurredOn
	if paidOn == "" {
		paidOn = t.CreditedOn
	}
	method := ledger.MethodBoleto
	if t.PaidByPIX() {
		method = ledger.MethodPIX
	}
	return ledger.PaymentRecord{
		Source:      source,
		SourceRef:   strings.Join([]string{t.Account, t.OurNumber, t.OccurredOn, t.CreditedOn, strconv.FormatInt(t.PaidCents, 10)}, "/"),
		AmountCents: t.PaidCents,
		Currency:    "BRL",
		PaidOn:      paidOn,
		Method:      method,
		Reference:   t.OurNumber,
		Payer:       t.PayerName,
	}, true
}
