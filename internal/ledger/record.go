package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/boleto"
	"github.com/cobranca/cobranca/internal/value"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// InvoiceRecord is one invoice as the operator's systems send it: a row of
// `cobranca invoices import`, an element of collections.record_invoices.
// Its JSON names are also the CSV header's.
type InvoiceRecord struct {
	InvoiceID    string `json:"invoiceId"`
	CustomerID   string `json:"customerId"`
	CustomerName string `json:"customerName,omitempty"`
	AmountCents  int64  `json:"amountCents"`
	Currency     string `json:"currency,omitempty"` // ISO 4217; BRL when empty
	IssueDate    string `json:"issueDate,omitempty"`
	DueDate      string `json:"dueDate"`
	Void         bool   `json:"void,omitempty"`
	PixTxID      string `json:"pixTxid,omitempty"`    // the txid of a PIX code the customer was given
	OurNumber    string `json:"ourNumber,omitempty"`  // the boleto's nosso número
	BoletoLine   string `json:"boletoLine,omitempty"` // the boleto's linha digitável, verified, stored as its 47 digits
	Reference    string `json:"reference,omitempty"`  // any other reference the customer may quote when paying
}

// Codes of a record's problems, as the tools answer them.
const (
	CodeInvalidText   = "invalid_text"
	CodeInvalidFormat = "invalid_format"
	CodeInvalidDate   = "invalid_date"
	CodeInvalidValue  = "invalid_value"
	CodeOutOfRange    = "out_of_range"
	CodeMissing       = "missing_field"
	CodeDuplicate     = "duplicate_entry"
	CodeTooMany       = "too_many_rows"
)

// FieldError is a record's problem: the field (a JSON name) and why. The
// message never holds the field's value.
type FieldError struct {
	Field   string
	Code    string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// MaxTxIDLen is the longest txid a static PIX code carries (BACEN's
// manual: up to 25 letters and digits).
const MaxTxIDLen = 25

// maxOurNumberLen is the nosso número's width in CNAB 240 (segment T 38-57).
const maxOurNumberLen = 20

// Validate checks a record and normalizes it: the currency defaults to
// BRL, the boleto line is kept as its digits.
func (r *InvoiceRecord) Validate() *FieldError {
	// Ids follow the customers' id rule: no white space at either end.
	for _, f := range []struct{ name, v string }{{"invoiceId", r.InvoiceID}, {"customerId", r.CustomerID}} {
		if msg := idProblem(f.v); msg != "" {
			return &FieldError{Field: f.name, Code: CodeInvalidText, Message: msg}
		}
	}
	if e := optionalTexts([2]string{"customerName", r.CustomerName}, [2]string{"reference", r.Reference}); e != nil {
		return e
	}
	if e := checkMoney(r.AmountCents, &r.Currency); e != nil {
		return e
	}
	if e := checkDate("dueDate", r.DueDate); e != nil {
		return e
	}
	if r.IssueDate != "" {
		if e := checkDate("issueDate", r.IssueDate); e != nil {
			return e
		}
		if r.IssueDate > r.DueDate {
			return &FieldError{Field: "issueDate", Code: CodeOutOfRange, Message: "must not be after dueDate"}
		}
	}
	if r.PixTxID != "" && !alnum(r.PixTxID, MaxTxIDLen) {
		return &FieldError{Field: "pixTxid", Code: CodeInvalidFormat, Message: fmt.Sprintf("must be 1 to %d letters and digits (A-Z, a-z, 0-9)", MaxTxIDLen)}
	}
	if r.OurNumber != "" && !alnum(r.OurNumber, maxOurNumberLen) {
		return &FieldError{Field: "ourNumber", Code: CodeInvalidFormat, Message: fmt.Sprintf("must be 1 to %d letters and digits", maxOurNumberLen)}
	}
	if r.BoletoLine != "" {
		l, err := boleto.Parse(r.BoletoLine)
		if err != nil {
			return &FieldError{Field: "boletoLine", Code: CodeInvalidValue, Message: err.Error()}
		}
		r.BoletoLine = l.Digits
	}
	return nil
}

// optionalTexts holds each named value that is not empty to the text
// rule.
func optionalTexts(fields ...[2]string) *FieldError {
	for _, f := range fields {
		if f[1] == "" {
			continue
		}
		if msg := value.TextProblem(f[1]); msg != "" {
			return &FieldError{Field: f[0], Code: CodeInvalidText, Message: msg}
		}
	}
	return nil
}

// checkMoney checks an amount of minor units and its currency, BRL when
// empty (set so).
func checkMoney(cents int64, currency *string) *FieldError {
	if cents < 1 || cents > value.MaxAmountCents {
		return &FieldError{Field: "amountCents", Code: CodeOutOfRange,
			Message: "must be a whole number of minor units from 1 to " + strconv.FormatInt(value.MaxAmountCents, 10)}
	}
	if *currency == "" {
		*currency = "BRL"
	}
	if _, ok := value.MinorUnits(*currency); !ok {
		return &FieldError{Field: "currency", Code: CodeInvalidValue, Message: "must be an active ISO 4217 currency code in upper case, such as BRL or USD"}
	}
	return nil
}

func checkDate(name, s string) *FieldError {
	if s == "" {
		return &FieldError{Field: name, Code: CodeMissing, Message: "is required (YYYY-MM-DD)"}
	}
	if code, msg := value.DateCheck(s); msg != "" {
		return &FieldError{Field: name, Code: code, Message: msg}
	}
	return nil
}

func alnum(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// RowError is a problem of one row of an import file: its line (1 is the
// CSV header) and column (the field's name), never the cell's content.
type RowError struct {
	Line    int
	Column  string
	Code    string
	Message string
}

func (e *RowError) Error() string { return e.problem().String() }

// problem is e as a Problem of an import file (its line is never 0).
func (e *RowError) problem() Problem {
	return Problem{Line: e.Line, Field: e.Column, Code: e.Code, Message: e.Message}
}

// RowErrors is every problem of a refused file, up to MaxRowErrors, in
// line order. A file is imported all or nothing.
type RowErrors []*RowError

// MaxRowErrors bounds the problems one read reports.
const MaxRowErrors = 100

func (es RowErrors) Error() string {
	parts := make([]string, 0, len(es))
	for _, e := range es {
		parts = append(parts, e.Error())
	}
	return strings.Join(parts, "; ")
}

func (es *RowErrors) add(e *RowError) bool {
	if len(*es) < MaxRowErrors {
		*es = append(*es, e)
	}
	return len(*es) < MaxRowErrors
}

// check validates the record read at line and refuses an invoice the file
// already had (seen maps an invoice id to its first line).
func (es *RowErrors) check(line int, rec *InvoiceRecord, seen map[string]int) {
	if fe := rec.Validate(); fe != nil {
		es.add(&RowError{Line: line, Column: fe.Field, Code: fe.Code, Message: fe.Message})
	} else if first, dup := seen[rec.InvoiceID]; dup {
		es.add(&RowError{Line: line, Column: "invoiceId", Code: CodeDuplicate, Message: fmt.Sprintf("repeats the invoice of line %d", first)})
	} else {
		seen[rec.InvoiceID] = line
	}
}

// InvoiceColumns are the CSV header's names: every JSON name of InvoiceRecord.
var InvoiceColumns = []string{"invoiceId", "customerId", "customerName", "amountCents", "currency", "issueDate",
	"dueDate", "void", "pixTxid", "ourNumber", "boletoLine", "reference"}

var requiredColumns = []string{"invoiceId", "customerId", "amountCents", "dueDate"}

// ReadInvoicesCSV reads invoices from CSV with a header of InvoiceRecord's
// JSON names (any order; the four required ones present), at most max
// rows. Every row is validated; a file with any problem is refused whole
// with RowErrors.
func ReadInvoicesCSV(r io.Reader, max int) ([]InvoiceRecord, error) {
	t, errs := OpenCSV(r, InvoiceColumns, requiredColumns)
	if len(errs) > 0 {
		return nil, errs
	}
	var recs []InvoiceRecord
	seen := make(map[string]int)
	for {
		row, line, rerr, stop := t.Next()
		if rerr != nil {
			errs.add(rerr)
			if stop {
				break
			}
			continue
		}
		if row == nil {
			break
		}
		if len(recs) == max {
			errs.add(&RowError{Line: line, Code: CodeTooMany, Message: fmt.Sprintf("a file holds at most %d invoices", max)})
			break
		}
		cell := func(name string) string { return t.Cell(row, name) }
		rec := InvoiceRecord{
			InvoiceID: cell("invoiceId"), CustomerID: cell("customerId"), CustomerName: cell("customerName"),
			Currency: cell("currency"), IssueDate: cell("issueDate"), DueDate: cell("dueDate"),
			PixTxID: cell("pixTxid"), OurNumber: cell("ourNumber"), BoletoLine: cell("boletoLine"),
			Reference: cell("reference"),
		}
		ok := true
		if n, valid := Cents(cell("amountCents")); !valid {
			errs.add(&RowError{Line: line, Column: "amountCents", Code: CodeInvalidFormat, Message: "must be a whole number of minor units, digits only"})
			ok = false
		} else {
			rec.AmountCents = n
		}
		switch cell("void") {
		case "", "false":
		case "true":
			rec.Void = true
		default:
			errs.add(&RowError{Line: line, Column: "void", Code: CodeInvalidValue, Message: `must be "true", "false" or empty`})
			ok = false
		}
		if ok {
			errs.check(line, &rec, seen)
		}
		if len(errs) >= MaxRowErrors {
			break
		}
		recs = append(recs, rec)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return recs, nil
}

// maxJSONLine bounds one line of JSON Lines: an invoice is far smaller.
const maxJSONLine = 64 << 10

// ReadInvoicesJSONL reads invoices from JSON Lines, one object a line, at
// most max. Each object is read strictly: unknown or repeated members and
// invalid UTF-8 are refused. Blank lines may end the file only.
func ReadInvoicesJSONL(r io.Reader, max int) ([]InvoiceRecord, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxJSONLine)
	var (
		errs  RowErrors
		recs  []InvoiceRecord
		blank []int
		line  int
	)
	seen := make(map[string]int)
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			blank = append(blank, line)
			continue
		}
		for _, l := range blank {
			errs.add(&RowError{Line: l, Code: CodeInvalidFormat, Message: "a blank line inside the file"})
		}
		blank = blank[:0]
		if len(recs) == max {
			errs.add(&RowError{Line: line, Code: CodeTooMany, Message: fmt.Sprintf("a file holds at most %d invoices", max)})
			break
		}
		var rec InvoiceRecord
		if !utf8.Valid(b) {
			errs.add(&RowError{Line: line, Code: CodeInvalidFormat, Message: "invalid UTF-8"})
		} else if err := jsonv2.Unmarshal(b, &rec, jsonv2.RejectUnknownMembers(true)); err != nil {
			errs.add(jsonError(line, err))
		} else {
			errs.check(line, &rec, seen)
		}
		if len(errs) >= MaxRowErrors {
			break
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		if !errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("ledger: read: %w", err)
		}
		errs.add(&RowError{Line: line + 1, Code: CodeInvalidFormat, Message: fmt.Sprintf("a line is longer than %d bytes", maxJSONLine)})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(recs) == 0 {
		return nil, RowErrors{{Line: 1, Code: CodeMissing, Message: "the file holds no invoice"}}
	}
	return recs, nil
}

// jsonError names the member a JSON error is about, never its value.
func jsonError(line int, err error) *RowError {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) {
		col := strings.TrimPrefix(string(se.JSONPointer), "/")
		switch {
		case errors.Is(err, jsonv2.ErrUnknownName):
			return &RowError{Line: line, Column: col, Code: CodeInvalidValue, Message: "not a known member"}
		case col != "":
			return &RowError{Line: line, Column: col, Code: CodeInvalidFormat, Message: "has the wrong JSON type or range"}
		}
	}
	if errors.Is(err, jsontext.ErrDuplicateName) {
		var syn *jsontext.SyntacticError
		col := ""
		if errors.As(err, &syn) {
			col = strings.TrimPrefix(string(syn.JSONPointer), "/")
		}
		return &RowError{Line: line, Column: col, Code: CodeDuplicate, Message: "the member appears twice"}
	}
	return &RowError{Line: line, Code: CodeInvalidFormat, Message: "not a JSON object of an invoice"}
}
