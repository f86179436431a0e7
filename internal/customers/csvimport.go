package customers

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/store"
)

// The bounds of one CSV import.
const (
	// MaxImportBytes bounds the file, in bytes.
	MaxImportBytes = 8 << 20
	// MaxImportRows bounds the customers of one file (rows after the
	// header).
	MaxImportRows = 10_000
	// maxRowErrors bounds the bad rows an ImportError lists; the others are
	// counted.
	maxRowErrors = 20
)

// importColumns are the columns of an import file, in any order.
var importColumns = [...]string{"id", "name", "email"}

// RowError is one bad place of an import file: its line (1 is the header)
// and, when one column is wrong, the column: its name (id, name or email) in
// a row, its position (1 is the first) in the header. The message never
// holds the value, nor a header cell.
type RowError struct {
	Line    int
	Column  string
	Message string
}

func (e RowError) String() string {
	if e.Column != "" {
		return fmt.Sprintf("line %d, column %s: %s", e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Message)
}

// ImportError is a file refused as a whole: nothing of it was imported.
type ImportError struct {
	Rows []RowError // the first bad rows, in file order
	More int        // bad rows beyond those listed
}

// BadRows is how many bad rows the file has, listed or not; a problem of
// the whole file (its size, its header, too many rows) counts as one.
func (e *ImportError) BadRows() int { return len(e.Rows) + e.More }

func (e *ImportError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nothing imported: %d bad row(s)", e.BadRows())
	for _, r := range e.Rows {
		b.WriteString("\n  ")
		b.WriteString(r.String())
	}
	if e.More > 0 {
		fmt.Fprintf(&b, "\n  … and %d more", e.More)
	}
	return b.String()
}

// Counts says what an import did.
type Counts struct {
	Created, Updated, Unchanged int
}

// ParseCSV reads an import file: UTF-8 (a leading byte order mark is
// skipped), a header naming the columns id, name and email once each, in
// any order and no other, then one customer a row, each checked as Record's
// Validate does; ids are unique in the file. It reads the whole file before
// it answers, and refuses it with an *ImportError listing the bad rows when
// any row is bad, so that nothing is imported from it. The file may hold at
// most MaxImportBytes bytes and MaxImportRows customers. Values are kept as
// written, those a spreadsheet reads as a formula (=…, +…, -…, @…) too: an
// export to CSV or TSV, should there be one, must neutralize them.
func ParseCSV(r io.Reader) ([]Record, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxImportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("customers import: read: %w", err)
	}
	if len(data) > MaxImportBytes {
		return nil, &ImportError{Rows: []RowError{{Line: 1, Message: "the file is larger than " + strconv.Itoa(MaxImportBytes) + " bytes; split it"}}}
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	cr := csv.NewReader(bytes.NewReader(data))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		msg := wantHeader
		if !errors.Is(err, io.EOF) {
			msg = csvProblem(err) + "; " + msg
		}
		return nil, &ImportError{Rows: []RowError{{Line: 1, Message: msg}}}
	}
	pos, re := columnsOf(header)
	if re != nil {
		return nil, &ImportError{Rows: []RowError{*re}}
	}
	var (
		recs  []Record
		bad   ImportError
		first = map[string]int{} // id → the line it was first given on
	)
	fail := func(e RowError) {
		if len(bad.Rows) < maxRowErrors {
			bad.Rows = append(bad.Rows, e)
		} else {
			bad.More++
		}
	}
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			line := 0
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line = pe.StartLine
			}
			fail(RowError{Line: line, Message: csvProblem(err)})
			if !errors.Is(err, csv.ErrFieldCount) {
				break // the reader cannot say where the next row starts
			}
			continue
		}
		line, _ := cr.FieldPos(0)
		if len(recs)+bad.More+len(bad.Rows) >= MaxImportRows {
			return nil, &ImportError{Rows: []RowError{{Line: line, Message: "the file has more than " + strconv.Itoa(MaxImportRows) + " customers; split it"}}}
		}
		rec := Record{ID: row[pos[0]], Name: row[pos[1]], Email: row[pos[2]]}
		if fe := rec.Validate(""); fe != nil {
			fail(RowError{Line: line, Column: fe.Field, Message: fe.Message})
			continue
		}
		if l, dup := first[rec.ID]; dup {
			fail(RowError{Line: line, Column: "id", Message: "repeats the id of line " + strconv.Itoa(l)})
			continue
		}
		first[rec.ID] = line
		recs = append(recs, rec)
	}
	if len(bad.Rows) > 0 {
		return nil, &bad
	}
	return recs, nil
}

// wantHeader says what a header must be, for the messages about one.
const wantHeader = "want a header naming exactly the columns id, name and email (lower case, no spaces), in any order"

// columnsOf returns where id, name and email are in header, or why header
// is not acceptable. A header cell may be customer data (a file with no
// header starts with a customer), so a message names a column by its
// position, never by what it holds.
func columnsOf(header []string) ([3]int, *RowError) {
	pos := [3]int{-1, -1, -1}
	for i, h := range header {
		at := strconv.Itoa(i + 1)
		k := -1
		for j, c := range importColumns {
			if h == c {
				k = j
			}
		}
		switch {
		case !utf8.ValidString(h):
			return pos, &RowError{Line: 1, Message: "the header is not valid UTF-8"}
		case k < 0 && strings.ContainsRune(h, '\r'):
			return pos, &RowError{Line: 1, Column: at, Message: "holds a carriage return: lines must end in LF or CR LF, not in CR alone; " + wantHeader}
		case k < 0:
			return pos, &RowError{Line: 1, Column: at, Message: "is not a column of a customer file: " + wantHeader}
		case pos[k] >= 0:
			return pos, &RowError{Line: 1, Column: at, Message: "names " + importColumns[k] + " again, as column " + strconv.Itoa(pos[k]+1) + " does"}
		}
		pos[k] = i
	}
	for j, c := range importColumns {
		if pos[j] < 0 {
			return pos, &RowError{Line: 1, Column: c, Message: "is missing: " + wantHeader}
		}
	}
	return pos, nil
}

// csvProblem says what encoding/csv found wrong, without the position
// (RowError has it) or any of the data.
func csvProblem(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			msg = "wrong number of fields: want one per header column"
		}
		return msg + " (at byte " + strconv.Itoa(pe.Column) + " of line " + strconv.Itoa(pe.Line) + ")"
	}
	return err.Error()
}

// Import creates or updates the customers recs in tx (Upsert, each), and
// counts what it did. Call it with what ParseCSV returned.
func Import(ctx context.Context, tx store.Tx, recs []Record, now time.Time) (Counts, error) {
	var n Counts
	for i, r := range recs {
		_, o, err := upsert(ctx, tx, r, now)
		if err != nil {
			return Counts{}, fmt.Errorf("customers import: customer %d: %w", i+1, err)
		}
		switch o {
		case Created:
			n.Created++
		case Updated:
			n.Updated++
		case Unchanged:
			n.Unchanged++
		}
	}
	return n, nil
}
