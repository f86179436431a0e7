// Package bankfile reads the files that tell what customers paid into
// ledger.PaymentRecord, one a payment, for ledger.ImportPayments: return
// files of the bank collection service in CNAB 240 (FEBRABAN), OFX bank
// statements, and a CSV of payments. The format is told from the content,
// never the file's name.
//
// A payment's identity in the ledger is its (Source, SourceRef): reading
// the same file again yields the same identities, so importing it twice
// changes nothing, and two payments of one file never share one.
//
//   - CNAB 240: Source "cnab240:<bank code>"; SourceRef is the title's
//     beneficiary account, nosso número, date of occurrence, date of credit
//     and amount paid, "/"-separated, then "#2", "#3"… on the second and
//     later settlements of the file with all of these equal (a boleto paid
//     twice the same day). The file's sequence number and line are left
//     out on purpose: a bank that sends a day's settlements again in
//     another file (an export over overlapping days) must not make them
//     new payments. Only settled titles (movement 06 or 17) are payments;
//     the method is pix when the bank reports the settlement paid by PIX
//     (reason 61), else boleto.
//   - OFX: Source "ofx:<BANKID>/<ACCTID>", SourceRef the FITID, unique per
//     account by the OFX specification. Only credits are payments; the
//     method is pix when the transaction's name or memo says PIX, transfer
//     for a transfer (TRNTYPE XFER or DIRECTDEP, or TED/DOC in the text),
//     else other.
//   - CSV: Source "csv", or "csv:<label>" when the operator names the
//     system the file comes from (Options.CSVSource), SourceRef the
//     column id: the same id in two exports of one system is one payment,
//     whatever the files are called.
//
// Errors name the line and field (CNAB, CSV) or the transaction and element
// (OFX), never a value: a bank file is customers' financial data.
package bankfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/value"
)

// Format is a kind of bank file.
type Format string

const (
	CNAB240 Format = "cnab240" // a return file of the collection service, FEBRABAN's CNAB 240
	OFX     Format = "ofx"     // an OFX bank statement, 1.x SGML or 2.x XML
	CSV     Format = "csv"     // a CSV of payments with a header (Columns)
)

// Name is how people call the format, for messages.
func (f Format) Name() string {
	switch f {
	case CNAB240:
		return "CNAB 240 return file"
	case OFX:
		return "OFX statement"
	case CSV:
		return "CSV of payments"
	}
	return "file"
}

// MaxPayments bounds the payments of one file, as ledger imports bound
// invoices.
const MaxPayments = 100_000

// File is what Read found.
type File struct {
	Format   Format
	Payments []ledger.PaymentRecord // in file order
	Places   []Place                // where each payment is in the file
	Skipped  int                    // records that are no payment received: titles not settled, debits
}

// Place is where something is in a file: a line (CNAB 240 and CSV,
// 1-based), or a transaction (OFX, its position among the statement's
// transactions); neither for the file as a whole.
type Place struct {
	Line        int
	Transaction int
}

func (p Place) String() string { return p.problem().Where() }

// Options are the reader's choices.
type Options struct {
	// CSVSource names the system a CSV of payments comes from ("" for
	// none): its payments' Source is "csv:" and the name.
	CSVSource string
}

// Problem is one reason a file is refused: where (a line, or an OFX
// transaction; neither for the file as a whole), the field (the layout's
// name and positions, the CSV column, the OFX element), a code and a
// message. It never holds the field's content.
type Problem struct {
	Place
	Field   string
	Code    string
	Message string
}

func (p Problem) String() string { return p.problem().String() }

// problem is p as an import's problem.
func (p Problem) problem() ledger.Problem {
	q := p.Place.problem()
	q.Field, q.Code, q.Message = p.Field, p.Code, p.Message
	return q
}

// Error is a file refused whole: nothing of it may be imported.
type Error struct {
	Format   Format    // "" when the format was not recognised
	Problems []Problem // in file order, at most ledger.MaxRowErrors
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) in the %s", len(e.Problems), e.Format.Name())
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

// problems gathers a file's problems up to the bound.
type problems struct {
	format Format
	list   []Problem
}

func (ps *problems) add(p Problem) {
	if len(ps.list) < ledger.MaxRowErrors {
		ps.list = append(ps.list, p)
	}
}

func (ps *problems) full() bool { return len(ps.list) >= ledger.MaxRowErrors }

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{Format: ps.format, Problems: ps.list}
}

// CodeUnknownFormat is the code of a file none of the readers takes.
const CodeUnknownFormat = "unknown_format"

// DetectBytes is how much of a file Detect reads.
const DetectBytes = 4096

// Detect tells a file's format from its first bytes (up to DetectBytes):
// a first line of 240 characters that opens a CNAB file header; an OFX
// header (OFXHEADER: of 1.x, or an XML declaration and <?OFX of 2.x);
// a CSV header naming amountCents. Anything else is refused, with what is
// read in the message.
func Detect(head []byte) (Format, error) {
	head = head[:min(len(head), DetectBytes)]
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	first, _, _ := bytes.Cut(head, []byte("\n"))
	first = bytes.TrimSuffix(first, []byte("\r"))
	switch {
	case len(first) >= 8 && isDigits(first[:3]) && string(first[3:8]) == "00000" && runeLen(first) == 240:
		return CNAB240, nil
	case len(first) == 400 && first[0] == '0' && bytes.Contains(first[:20], []byte("RETORNO")):
		return "", unknown("a CNAB 400 return file: ask the bank for the CNAB 240 layout of the collection service, which this server reads")
	case bytes.HasPrefix(trimmed, []byte("OFXHEADER:")) ||
		bytes.HasPrefix(trimmed, []byte("<?xml")) && bytes.Contains(head, []byte("<?OFX")) ||
		bytes.HasPrefix(trimmed, []byte("<OFX>")):
		return OFX, nil
	case csvHeader(first):
		return CSV, nil
	}
	return "", unknown("not a bank file this server reads: want a CNAB 240 return file of the collection service, an OFX statement, " +
		"or a CSV of payments whose header names its columns (" + strings.Join(Columns, ", ") + ")")
}

func unknown(msg string) error {
	return &Error{Problems: []Problem{{Code: CodeUnknownFormat, Message: msg}}}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// runeLen is a line's length in characters as cnab reads it: its bytes
// when there are 240 (Latin-1), else its UTF-8 characters.
func runeLen(b []byte) int {
	if len(b) == 240 {
		return 240
	}
	return len([]rune(string(b)))
}

// csvHeader reports whether line is a CSV header with the column
// amountCents, which every CSV of payments has.
func csvHeader(line []byte) bool {
	for cell := range bytes.SplitSeq(line, []byte(",")) {
		if string(bytes.Trim(cell, `"`)) == "amountCents" {
			return true
		}
	}
	return false
}

// Read reads a bank file of any of the formats, told from its content.
// A file refused is an *Error (every problem found, up to a bound); other
// errors are failures to read.
func Read(r io.Reader, o Options) (*File, error) {
	if o.CSVSource != "" {
		if msg := value.TextProblem(o.CSVSource); msg != "" {
			return nil, fmt.Errorf("bankfile: the CSV's source %s", msg)
		}
	}
	br := bufio.NewReaderSize(r, DetectBytes)
	head, err := br.Peek(DetectBytes)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, fmt.Errorf("bankfile: read: %w", err)
	}
	if len(head) == 0 {
		return nil, &Error{Problems: []Problem{{Code: ledger.CodeMissing, Message: "the file is empty"}}}
	}
	format, err := Detect(head)
	if err != nil {
		return nil, err
	}
	switch format {
	case CNAB240:
		return readCNAB(br)
	case OFX:
		return readOFX(br)
	default:
		return readCSV(br, o.CSVSource)
	}
}

// validate checks p as the ledger will, and reports its problem at where,
// with the field named as the format names it (fields maps a
// PaymentRecord's JSON name to it; a name not in it is kept).
func validate(ps *problems, p *ledger.PaymentRecord, where Problem, fields map[string]string) bool {
	fe := p.Validate()
	if fe == nil {
		return true
	}
	where.Field = fe.Field
	if f, ok := fields[fe.Field]; ok {
		where.Field = f
	}
	where.Code, where.Message = fe.Code, fe.Message
	ps.add(where)
	return false
}

// tooMany is the problem of a file with more than MaxPayments payments.
func tooMany(where Problem) Problem {
	where.Code = ledger.CodeTooMany
	where.Message = fmt.Sprintf("a file holds at most %d payments", MaxPayments)
	return where
}
