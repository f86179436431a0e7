// Package cnab reads the return files ("arquivo retorno") of the bank
// collection service (cobrança) in FEBRABAN's CNAB 240 layout: a file
// header (record 0), batches of a batch header (1), detail records (3) in
// segments T and U per collected title, and a batch trailer (5), then a file
// trailer (9). Each record is one line of 240 characters.
//
// The reader is strict: every line is checked against the layout (record
// order, batch numbers, sequence numbers, counts in the trailers, numeric
// fields, dates), and an error names the line and the field, never the
// field's content. Optional segments a bank adds (Y, for instance) are
// counted and skipped. Lines may end in LF or CRLF and be in Latin-1 (as
// banks write them) or UTF-8.
package cnab

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// LineLen is the length of every CNAB 240 record.
const LineLen = 240

// MaxLines bounds how many records Read accepts: a return file of a million
// titles is two million lines.
const MaxLines = 2_100_000

// maxErrors bounds how many line errors one Read reports.
const maxErrors = 50

// File is a parsed return file.
type File struct {
	Bank            string // the bank's three-digit code (FEBRABAN)
	CompanyDocument string // the company's CPF or CNPJ, digits as written
	CompanyName     string
	BankName        string
	GeneratedAt     time.Time // when the bank generated the file (no zone: UTC as written)
	Sequence        int       // the bank's sequence number of the file
	LayoutVersion   string
	Batches         []Batch
}

// Batch is one batch (lote) of the file.
type Batch struct {
	Number int
	Titles []Title
}

// Title is one collected title: a segment T and the segment U that follows it.
type Title struct {
	Line             int    // the line of its segment T (1-based)
	Movement         string // código de movimento retorno: "06" settled, "02" registered, "09" written off by the bank…
	Account          string // the beneficiary's agency and account with their check digits, as written (T 18-37)
	OurNumber        string // nosso número, as the bank wrote it, spaces trimmed
	DocumentNumber   string // seu número, the company's document number
	DueDate          string // YYYY-MM-DD, empty when the bank wrote zeros
	FaceValueCents   int64  // valor nominal do título
	CompanyReference string // identificação do título na empresa (uso da empresa)
	Currency         string // código da moeda ("09" is the real)
	PayerDocument    string // CPF or CNPJ of the payer, digits
	PayerName        string
	FeeCents         int64    // valor da tarifa
	Reasons          []string // motivo da ocorrência: up to five two-character codes, blanks and "00" left out
	InterestCents    int64    // juros, multa e encargos
	DiscountCents    int64    // desconto concedido
	RebateCents      int64    // abatimento
	PaidCents        int64    // valor pago pelo sacado
	CreditedCents    int64    // valor líquido a ser creditado
	OccurredOn       string   // data da ocorrência, YYYY-MM-DD
	CreditedOn       string   // data do crédito, YYYY-MM-DD or empty
}

// Settled reports whether the bank reports the title paid: movement 06
// (liquidação) or 17 (liquidação após baixa ou de título não registrado).
func (t Title) Settled() bool { return t.Movement == "06" || t.Movement == "17" }

// ReasonPIX is the reason (motivo da ocorrência) of a settlement paid by
// PIX, through the QR code of a hybrid boleto (boleto híbrido).
const ReasonPIX = "61"

// PaidByPIX reports whether the bank reports a settled title paid by PIX.
func (t Title) PaidByPIX() bool { return t.Settled() && slices.Contains(t.Reasons, ReasonPIX) }

// Error is one problem in a file, at a line and a field. Its text never
// holds the field's content.
type Error struct {
	Line   int    // 1-based; 0 for the file as a whole
	Field  string // the layout's name for the field and its positions, e.g. "valor pago (U 78-92)"
	Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Errors is what Read returns for a file it refuses: every problem found, up
// to a bound, in line order.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// field is a span of a record, 1-based and inclusive as the layout writes it.
type field struct {
	name       string
	from, to   int
	numeric    bool // digits only
	date       bool // DDMMAAAA, or zeros for none
	money      bool // 13 integer and 2 decimal digits, no separator
	allowSpace bool // for numeric fields some banks leave blank when unused
}

func (f field) label(segment string) string {
	if f.from == f.to {
		return fmt.Sprintf("%s (%s%d)", f.name, segment, f.from)
	}
	return fmt.Sprintf("%s (%s%d-%d)", f.name, segment, f.from, f.to)
}

// The layout's fields that the reader checks or reads. Positions are
// FEBRABAN's (layout 040 of the batch, 087–103 of the file, which agree on
// these spans).
var (
	fBank     = field{name: "código do banco", from: 1, to: 3, numeric: true}
	fBatch    = field{name: "lote de serviço", from: 4, to: 7, numeric: true}
	fRecord   = field{name: "tipo de registro", from: 8, to: 8, numeric: true}
	fDocument = field{name: "número de inscrição da empresa", from: 19, to: 32, numeric: true}
	fCompany  = field{name: "nome da empresa", from: 73, to: 102}
	fBankName = field{name: "nome do banco", from: 103, to: 132}
	fFileKind = field{name: "código remessa/retorno", from: 143, to: 143, numeric: true}
	fGenDate  = field{name: "data de geração", from: 144, to: 151, date: true}
	fGenTime  = field{name: "hora de geração", from: 152, to: 157, numeric: true}
	fFileSeq  = field{name: "número sequencial do arquivo", from: 158, to: 163, numeric: true}
	fLayout   = field{name: "versão do layout do arquivo", from: 164, to: 166, numeric: true}

	fOperation = field{name: "tipo de operação", from: 9, to: 9}
	fService   = field{name: "tipo de serviço", from: 10, to: 11, numeric: true}

	fSeq      = field{name: "número sequencial do registro no lote", from: 9, to: 13, numeric: true}
	fSegment  = field{name: "código de segmento", from: 14, to: 14}
	fMovement = field{name: "código de movimento", from: 16, to: 17, numeric: true}

	tAccount   = field{name: "agência e conta do beneficiário", from: 18, to: 37}
	tOurNumber = field{name: "nosso número", from: 38, to: 57}
	tDocument  = field{name: "número do documento", from: 59, to: 73}
	tDueDate   = field{name: "data de vencimento", from: 74, to: 81, date: true}
	tFaceValue = field{name: "valor nominal do título", from: 82, to: 96, money: true}
	tCompRef   = field{name: "identificação do título na empresa", from: 106, to: 130}
	tCurrency  = field{name: "código da moeda", from: 131, to: 132, numeric: true, allowSpace: true}
	tPayerKind = field{name: "tipo de inscrição do pagador", from: 133, to: 133, numeric: true, allowSpace: true}
	tPayerDoc  = field{name: "número de inscrição do pagador", from: 134, to: 148, numeric: true, allowSpace: true}
	tPayerName = field{name: "nome do pagador", from: 149, to: 188}
	tFee       = field{name: "valor da tarifa", from: 199, to: 213, money: true}
	tReasons   = field{name: "motivo da ocorrência", from: 214, to: 223}

	uInterest = field{name: "juros, multa e encargos", from: 18, to: 32, money: true}
	uDiscount = field{name: "valor do desconto", from: 33, to: 47, money: true}
	uRebate   = field{name: "valor do abatimento", from: 48, to: 62, money: true}
	uPaid     = field{name: "valor pago", from: 78, to: 92, money: true}
	uCredited = field{name: "valor líquido creditado", from: 93, to: 107, money: true}
	uOccurred = field{name: "data da ocorrência", from: 138, to: 145, date: true}
	uCredit   = field{name: "data do crédito", from: 146, to: 153, date: true}

	trBatchRecords = field{name: "quantidade de registros do lote", from: 18, to: 23, numeric: true}
	trFileBatches  = field{name: "quantidade de lotes do arquivo", from: 18, to: 23, numeric: true}
	trFileRecords  = field{name: "quantidade de registros do arquivo", from: 24, to: 29, numeric: true}
)

// record is one line, as 240 runes (a Latin-1 byte or a UTF-8 character each).
type record struct {
	n    int
	r    []rune
	errs *Errors
	seg  string // "T " or "U " in field labels of details, "" elsewhere
}

func (rec *record) fail(f field, format string, args ...any) {
	if len(*rec.errs) < maxErrors {
		*rec.errs = append(*rec.errs, &Error{Line: rec.n, Field: f.label(rec.seg), Reason: fmt.Sprintf(format, args...)})
	}
}

// raw is the field's text as written.
func (rec *record) raw(f field) string { return string(rec.r[f.from-1 : f.to]) }

// text is an alphanumeric field, spaces trimmed; control characters refused.
func (rec *record) text(f field) string {
	s := strings.TrimSpace(rec.raw(f))
	for _, c := range s {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			rec.fail(f, "holds a control character")
			return ""
		}
	}
	return s
}

// digits is a numeric field's text; it must be digits (or blank where the
// field allows it).
func (rec *record) digits(f field) string {
	s := rec.raw(f)
	if f.allowSpace && strings.TrimSpace(s) == "" {
		return ""
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			rec.fail(f, "must be %d digits", f.to-f.from+1)
			return ""
		}
	}
	return s
}

func (rec *record) number(f field) int {
	s := rec.digits(f)
	if s == "" {
		return 0
	}
	n, _ := strconv.Atoi(s) // at most 6 digits here
	return n
}

// cents reads a money field: 15 digits, the last two the cents.
func (rec *record) cents(f field) int64 {
	s := rec.digits(f)
	if s == "" {
		return 0
	}
	n, _ := strconv.ParseInt(s, 10, 64) // 15 digits fit
	return n
}

// date reads DDMMAAAA as YYYY-MM-DD; zeros (or blanks) are no date.
func (rec *record) date(f field) string {
	s := rec.raw(f)
	if s == "00000000" || strings.TrimSpace(s) == "" {
		return ""
	}
	if rec.digits(f) == "" {
		return ""
	}
	t, err := time.Parse("02012006", s)
	if err != nil {
		rec.fail(f, "is not a date (DDMMAAAA)")
		return ""
	}
	return t.Format(time.DateOnly)
}

func (rec *record) expect(f field, want string) bool {
	if rec.raw(f) != want {
		rec.fail(f, "must be %q", want)
		return false
	}
	return true
}

// Read reads a CNAB 240 return file of the collection service. A file it
// refuses yields Errors, every problem found (up to 50) by line and field.
func Read(r io.Reader) (*File, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1024), 4*LineLen+8)
	var (
		errs  Errors
		recs  []*record
		blank []int // lines that were empty: allowed only at the end
		lines int
	)
	for sc.Scan() {
		lines++
		if lines > MaxLines {
			return nil, Errors{{Line: lines, Reason: fmt.Sprintf("the file has more than %d lines", MaxLines)}}
		}
		b := bytes.TrimSuffix(sc.Bytes(), []byte{'\r'})
		if len(b) == 0 || (len(b) == 1 && b[0] == 0x1a) { // a blank line, or DOS's end-of-file mark
			blank = append(blank, lines)
			continue
		}
		for _, l := range blank {
			if len(errs) < maxErrors {
				errs = append(errs, &Error{Line: l, Reason: "a blank line inside the file"})
			}
		}
		blank = blank[:0]
		rs, ok := decodeLine(b)
		if !ok {
			if len(errs) < maxErrors {
				errs = append(errs, &Error{Line: lines, Reason: fmt.Sprintf("a record must be %d characters long", LineLen)})
			}
			continue
		}
		recs = append(recs, &record{n: lines, r: rs, errs: &errs})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, Errors{{Line: lines + 1, Reason: fmt.Sprintf("a record must be %d characters long", LineLen)}}
		}
		return nil, fmt.Errorf("cnab: read: %w", err)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(recs) == 0 {
		return nil, Errors{{Reason: "the file is empty"}}
	}
	f := parse(recs, &errs)
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
		return nil, errs
	}
	return f, nil
}

// decodeLine reads a record as runes: 240 bytes are Latin-1 (one rune a
// byte, as banks write), otherwise valid UTF-8 of 240 characters.
func decodeLine(b []byte) ([]rune, bool) {
	if len(b) == LineLen {
		rs := make([]rune, LineLen)
		for i, c := range b {
			rs[i] = rune(c)
		}
		return rs, true
	}
	if len(b) > LineLen && len(b) <= 4*LineLen && utf8.Valid(b) && utf8.RuneCount(b) == LineLen {
		return []rune(string(b)), true
	}
	return nil, false
}

// parse walks the records in the layout's order: 0, then (1, 3…, 5)…, then 9.
func parse(recs []*record, errs *Errors) *File {
	head := recs[0]
	f := &File{}
	if !head.expect(fRecord, "0") {
		return f
	}
	f.Bank = head.digits(fBank)
	head.expect(fBatch, "0000")
	f.CompanyDocument = head.digits(fDocument)
	f.CompanyName = head.text(fCompany)
	f.BankName = head.text(fBankName)
	if head.raw(fFileKind) != "2" {
		head.fail(fFileKind, "must be \"2\": this is not a return file")
	}
	if raw := strings.TrimLeft(head.raw(fGenDate), "0 "); raw == "" {
		head.fail(fGenDate, "is required")
	} else if d := head.date(fGenDate); d != "" {
		if hms := head.digits(fGenTime); hms != "" {
			t, err := time.Parse(time.DateOnly+"150405", d+hms)
			if err != nil {
				head.fail(fGenTime, "is not a time (HHMMSS)")
			}
			f.GeneratedAt = t
		}
	}
	f.Sequence = head.number(fFileSeq)
	f.LayoutVersion = head.digits(fLayout)

	i := 1
	for i < len(recs) && recs[i].raw(fRecord) != "9" {
		b, next := parseBatch(recs, i, f.Bank, len(f.Batches)+1)
		f.Batches = append(f.Batches, b)
		if next <= i { // the batch could not be read: stop at its first line
			return f
		}
		i = next
	}
	if i >= len(recs) {
		last := recs[len(recs)-1]
		*errs = append(*errs, &Error{Line: last.n + 1, Reason: "the file trailer (record 9) is missing"})
		return f
	}
	tr := recs[i]
	checkBank(tr, f.Bank)
	tr.expect(fBatch, "9999")
	if n := tr.number(trFileBatches); n != len(f.Batches) && tr.digits(trFileBatches) != "" {
		tr.fail(trFileBatches, "says %d, the file has %d", n, len(f.Batches))
	}
	if n := tr.number(trFileRecords); n != i+1 && tr.digits(trFileRecords) != "" {
		tr.fail(trFileRecords, "says %d, the file has %d", n, i+1)
	}
	for _, extra := range recs[i+1:] {
		*errs = append(*errs, &Error{Line: extra.n, Reason: "a record after the file trailer"})
		break
	}
	return f
}

func checkBank(rec *record, bank string) {
	if b := rec.digits(fBank); b != "" && b != bank {
		rec.fail(fBank, "differs from the file header's")
	}
}

// parseBatch reads the batch whose header is recs[i]; it returns the index
// after its trailer, or i when it could not go on.
func parseBatch(recs []*record, i int, bank string, want int) (Batch, int) {
	head := recs[i]
	var b Batch
	if !head.expect(fRecord, "1") {
		return b, i
	}
	checkBank(head, bank)
	b.Number = head.number(fBatch)
	if b.Number != want && head.digits(fBatch) != "" {
		head.fail(fBatch, "must be %04d: batches are numbered in order", want)
	}
	if head.raw(fOperation) != "T" {
		head.fail(fOperation, "must be \"T\": this is not a return batch")
	}
	if head.raw(fService) != "01" {
		head.fail(fService, "must be \"01\": this batch is not of the collection service")
	}
	batchNo := head.raw(fBatch)
	seq := 0
	j := i + 1
	for ; j < len(recs); j++ {
		rec := recs[j]
		kind := rec.raw(fRecord)
		if kind != "3" {
			break
		}
		checkBank(rec, bank)
		if rec.raw(fBatch) != batchNo {
			rec.fail(fBatch, "differs from its batch header's")
		}
		seq++
		if n := rec.number(fSeq); n != seq && rec.digits(fSeq) != "" {
			rec.fail(fSeq, "must be %d", seq)
		}
		switch rec.raw(fSegment) {
		case "T":
			if j+1 >= len(recs) || recs[j+1].raw(fRecord) != "3" || recs[j+1].raw(fSegment) != "U" {
				rec.fail(fSegment, "a segment T must be followed by its segment U")
				continue
			}
			u := recs[j+1]
			checkBank(u, bank)
			if u.raw(fBatch) != batchNo {
				u.fail(fBatch, "differs from its batch header's")
			}
			seq++
			if n := u.number(fSeq); n != seq && u.digits(fSeq) != "" {
				u.fail(fSeq, "must be %d", seq)
			}
			b.Titles = append(b.Titles, readTitle(rec, u))
			j++
		case "U":
			rec.fail(fSegment, "a segment U must follow a segment T")
		default:
			// An optional segment (Y and others): counted, not read.
		}
	}
	if j >= len(recs) || recs[j].raw(fRecord) != "5" {
		line := recs[len(recs)-1].n + 1
		if j < len(recs) {
			line = recs[j].n
		}
		*head.errs = append(*head.errs, &Error{Line: line, Field: fRecord.label(""), Reason: "must be \"5\": the batch trailer is missing"})
		return b, i
	}
	tr := recs[j]
	checkBank(tr, bank)
	if tr.raw(fBatch) != batchNo {
		tr.fail(fBatch, "differs from its batch header's")
	}
	if n := tr.number(trBatchRecords); n != j-i+1 && tr.digits(trBatchRecords) != "" {
		tr.fail(trBatchRecords, "says %d, the batch has %d", n, j-i+1)
	}
	return b, j + 1
}

func readTitle(t, u *record) Title {
	t.seg, u.seg = "T ", "U "
	defer func() { t.seg, u.seg = "", "" }()
	return Title{
		Line:             t.n,
		Movement:         t.digits(fMovement),
		Account:          t.text(tAccount),
		OurNumber:        t.text(tOurNumber),
		DocumentNumber:   t.text(tDocument),
		DueDate:          t.date(tDueDate),
		FaceValueCents:   t.cents(tFaceValue),
		CompanyReference: t.text(tCompRef),
		Currency:         t.digits(tCurrency),
		PayerDocument:    payerDocument(t),
		PayerName:        t.text(tPayerName),
		FeeCents:         t.cents(tFee),
		Reasons:          reasons(t),
		InterestCents:    u.cents(uInterest),
		DiscountCents:    u.cents(uDiscount),
		RebateCents:      u.cents(uRebate),
		PaidCents:        u.cents(uPaid),
		CreditedCents:    u.cents(uCredited),
		OccurredOn:       u.date(uOccurred),
		CreditedOn:       u.date(uCredit),
	}
}

// reasons are the codes of the motivo da ocorrência, in the order written.
func reasons(t *record) []string {
	if t.text(tReasons) == "" { // blank, or refused for a control character
		return nil
	}
	raw := []rune(t.raw(tReasons))
	var out []string
	for i := 0; i+2 <= len(raw); i += 2 {
		if c := string(raw[i : i+2]); c != "  " && c != "00" {
			out = append(out, c)
		}
	}
	return out
}

// payerDocument is the payer's CPF (11 digits) or CNPJ (14) without the
// layout's left padding, as its kind says; as written for another kind.
func payerDocument(t *record) string {
	doc := t.digits(tPayerDoc)
	if doc == "" {
		return ""
	}
	switch t.digits(tPayerKind) {
	case "1":
		return doc[len(doc)-11:]
	case "2":
		return doc[len(doc)-14:]
	}
	return doc
}
