package ledger

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// CSVTable reads an import file in CSV whose header names its columns, in
// any order: the invoices of `cobranca invoices import`, the payments of
// `cobranca payments import`. Its errors name lines and columns, never a
// cell's content.
type CSVTable struct {
	cr    *csv.Reader
	index map[string]int // a column's position in the header, plus one
}

// OpenCSV reads the header: a leading byte order mark (spreadsheets write
// one) is skipped; every name must be one of columns, and appear once;
// every one of required must be there. A bad header is every problem of
// line 1.
func OpenCSV(r io.Reader, columns, required []string) (*CSVTable, RowErrors) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte("\xef\xbb\xbf")) {
		_, _ = br.Discard(3)
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, RowErrors{{Line: 1, Code: CodeMissing, Message: "the file is empty: a header is required"}}
	}
	if err != nil {
		return nil, RowErrors{csvError(err)}
	}
	var errs RowErrors
	index := make(map[string]int, len(head))
	for i, name := range head {
		switch {
		case !slices.Contains(columns, name):
			errs.add(&RowError{Line: 1, Column: fmt.Sprintf("column %d", i+1), Code: CodeInvalidValue,
				Message: "not a known column (" + strings.Join(columns, ", ") + ")"})
		case index[name] != 0:
			errs.add(&RowError{Line: 1, Column: name, Code: CodeDuplicate, Message: "the column appears twice"})
		}
		index[name] = i + 1
	}
	for _, name := range required {
		if index[name] == 0 {
			errs.add(&RowError{Line: 1, Column: name, Code: CodeMissing, Message: "a required column is missing"})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &CSVTable{cr: cr, index: index}, nil
}

// Next reads the next row (valid until the next call) and its line. At the
// end of the file row and rerr are nil. A row the CSV reader refuses is
// rerr, and stop says whether reading cannot go on past it (a broken
// quote).
func (t *CSVTable) Next() (row []string, line int, rerr *RowError, stop bool) {
	row, err := t.cr.Read()
	if err == io.EOF {
		return nil, 0, nil, true
	}
	if err != nil {
		var pe *csv.ParseError
		return nil, 0, csvError(err), !errors.As(err, &pe) || !errors.Is(pe.Err, csv.ErrFieldCount)
	}
	line, _ = t.cr.FieldPos(0)
	return row, line, nil, false
}

// Cell is row's cell of column name, "" when the header does not have it.
func (t *CSVTable) Cell(row []string, name string) string {
	if i := t.index[name]; i > 0 {
		return row[i-1]
	}
	return ""
}

// Cents reads a cell of minor units: digits only, no sign, no decimals.
func Cents(s string) (int64, bool) {
	if !digitsOnly(s, 18) {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// csvError turns encoding/csv's error into a RowError without the text it
// quotes.
func csvError(err error) *RowError {
	var pe *csv.ParseError
	if !errors.As(err, &pe) {
		return &RowError{Code: CodeInvalidFormat, Message: "the file could not be read as CSV"}
	}
	col := ""
	if pe.Column > 0 {
		col = fmt.Sprintf("character %d", pe.Column)
	}
	msg := "not valid CSV"
	switch {
	case errors.Is(pe.Err, csv.ErrFieldCount):
		msg = "the row has another number of cells than the header"
		col = ""
	case errors.Is(pe.Err, csv.ErrBareQuote):
		msg = "a quote inside an unquoted cell"
	case errors.Is(pe.Err, csv.ErrQuote):
		msg = "a quoted cell is not closed properly"
	}
	return &RowError{Line: pe.Line, Column: col, Code: CodeInvalidFormat, Message: msg}
}

func digitsOnly(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
