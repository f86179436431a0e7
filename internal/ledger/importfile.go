package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
)

// An import of a file, from the command line (`cobranca invoices import`, `cobranca payments
// import`) or the console's import page, runs the code of this file (the bank files' side is
// bankfile's): the file read whole, every problem listed and nothing imported, or every record
// written in one transaction, whose audit event (these names, the counts of Details) the caller
// appends in it.
const (
	EventInvoicesImported = "ledger.invoices.imported"
	EventPaymentsImported = "ledger.payments.imported"
)

// MaxImportBytes bounds the bytes of one import file: 100 000 invoices with every column
// filled are about 30 MB.
const MaxImportBytes = 64 << 20

// MaxInvoiceRows bounds the invoices of one file.
const MaxInvoiceRows = 100_000

// Problem is one reason an import file is refused: where the file has it (Line, 1-based, or
// Transaction, an OFX statement's; neither for the file as a whole), the field, a code and a
// message. It never holds the field's content.
type Problem struct {
	Line, Transaction int
	Field, Code       string
	Message           string
}

// Where is the problem's place as messages write it: "line 3", "transaction 2", or "".
func (p Problem) Where() string {
	switch {
	case p.Line > 0:
		return "line " + strconv.Itoa(p.Line)
	case p.Transaction > 0:
		return "transaction " + strconv.Itoa(p.Transaction)
	}
	return ""
}

func (p Problem) String() string {
	var b strings.Builder
	if at := p.Where(); at != "" {
		b.WriteString(at + ": ")
	}
	if p.Field != "" {
		b.WriteString(p.Field + ": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// FileError is an import file refused whole: nothing of it was imported. It is the cause of
// the *failure.Error an import returns (RefuseFile), for who lists the problems one by one.
type FileError struct {
	// Of is what the file was read as ("file of invoices", "CNAB 240 return file"), when its
	// reading found the problems; "" when the ledger refused one of its records.
	Of       string
	Problems []Problem
}

func (e *FileError) Error() string {
	if e.Of == "" && len(e.Problems) == 1 {
		return "nothing imported: " + e.Problems[0].String()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "nothing imported: %d problem(s) in the %s", len(e.Problems), e.Of)
	for _, p := range e.Problems {
		b.WriteString("\n  " + p.String())
	}
	return b.String()
}

// RefuseFile is the refusal of an import file (code, and fe's message), its cause fe.
func RefuseFile(code failure.Code, fe *FileError) *failure.Error {
	return &failure.Error{Code: code, Message: fe.Error(), Err: fe}
}

// RefuseRecord is the refusal of the record of an import file the ledger refused (ie), at p,
// where the file has it.
func RefuseRecord(ie *IndexError, p Problem) *failure.Error {
	p.Field, p.Code, p.Message = ie.Err.Field, string(ie.Err.Code), ie.Err.Message
	return RefuseFile(ie.Err.Code, &FileError{Problems: []Problem{p}})
}

// InvoiceFile is a file of invoices read whole for an import.
type InvoiceFile struct {
	Records []InvoiceRecord
	data    []byte // the file, for the line of a record the ledger refuses
}

// ReadInvoiceFile reads a file of invoices: JSON Lines when its first character is an
// object's brace, else CSV with a header; at most MaxInvoiceRows. A file with problems is
// refused (invalid_arguments, its cause a *FileError listing them); other errors are failures
// to read.
func ReadInvoiceFile(data []byte) (*InvoiceFile, error) {
	var (
		recs []InvoiceRecord
		err  error
	)
	if isJSONLines(data) {
		recs, err = ReadInvoicesJSONL(bytes.NewReader(data), MaxInvoiceRows)
	} else {
		recs, err = ReadInvoicesCSV(bytes.NewReader(data), MaxInvoiceRows)
	}
	if bad, ok := errors.AsType[RowErrors](err); ok {
		fe := &FileError{Of: "file of invoices"}
		for _, e := range bad {
			fe.Problems = append(fe.Problems, e.problem())
		}
		return nil, RefuseFile(failure.InvalidArguments, fe)
	}
	if err != nil {
		return nil, err
	}
	return &InvoiceFile{Records: recs, data: data}, nil
}

func isJSONLines(data []byte) bool {
	data = bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// InvoiceImport is what an import of a file of invoices did.
type InvoiceImport struct {
	Rows int
	UpsertCounts
}

// Details are n's counts, for its audit event (EventInvoicesImported).
func (n InvoiceImport) Details() map[string]int64 {
	return map[string]int64{"rows": int64(n.Rows), "created": int64(n.Created), "updated": int64(n.Updated), "unchanged": int64(n.Unchanged)}
}

// Import creates or updates the file's invoices in tx (UpsertInvoices): all of them or, when
// the ledger refuses one, none, refused naming its line (its cause a *FileError).
func (f *InvoiceFile) Import(ctx context.Context, tx store.Tx, now time.Time) (InvoiceImport, error) {
	n, err := UpsertInvoices(ctx, tx, f.Records, now)
	if ie, ok := errors.AsType[*IndexError](err); ok {
		return InvoiceImport{}, RefuseRecord(ie, Problem{Line: f.line(ie.Index)})
	}
	if err != nil {
		return InvoiceImport{}, err
	}
	return InvoiceImport{Rows: len(f.Records), UpsertCounts: n}, nil
}

// line is the line of the i-th invoice: in JSON Lines its line; in CSV the line its row starts
// on (a quoted cell may hold line breaks).
func (f *InvoiceFile) line(i int) int {
	if isJSONLines(f.data) {
		return i + 1
	}
	t, _ := OpenCSV(bytes.NewReader(f.data), InvoiceColumns, nil)
	if t == nil { // cannot be: the file was read whole before
		return 0
	}
	for n := 0; ; n++ {
		row, line, _, stop := t.Next()
		if row == nil && stop {
			return 0
		}
		if n == i {
			return line
		}
	}
}
