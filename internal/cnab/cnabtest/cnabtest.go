// Package cnabtest writes CNAB 240 return files of the collection service
// for tests and benchmarks: each record by the positions FEBRABAN's layout
// tables give (1-based, inclusive), independently of package cnab's reader,
// so that the writer and the reader cannot share a mistake.
package cnabtest

import (
	"bytes"
	"fmt"
	"time"
)

// lineLen is the length of every record (cnab.LineLen; not imported, so
// that cnab's own tests can use this package).
const lineLen = 240

// line is a record under construction.
type line [lineLen]byte

func blankLine() *line {
	var l line
	for i := range l {
		l[i] = ' '
	}
	return &l
}

// num writes n right-aligned and zero-padded into from..to.
func (l *line) num(from, to int, n int64) *line {
	s := fmt.Sprintf("%0*d", to-from+1, n)
	if len(s) != to-from+1 {
		panic(fmt.Sprintf("%d does not fit %d-%d", n, from, to))
	}
	copy(l[from-1:to], s)
	return l
}

// alpha writes s left-aligned, space-padded, into from..to.
func (l *line) alpha(from, to int, s string) *line {
	if len(s) > to-from+1 {
		panic(fmt.Sprintf("%q does not fit %d-%d", s, from, to))
	}
	copy(l[from-1:to], s)
	return l
}

func (l *line) date(from int, d string) *line {
	if d == "" {
		return l.num(from, from+7, 0)
	}
	t, err := time.Parse(time.DateOnly, d)
	if err != nil {
		panic(err)
	}
	return l.alpha(from, from+7, t.Format("02012006"))
}

// Builder writes a return file: NewBuilder, then OpenBatch, Add… and
// CloseBatch for each batch, then Bytes.
type Builder struct {
	bank    int64
	lines   []*line
	batches int
	batch   int // lines in the open batch
	seq     int
}

// NewBuilder starts a return file of bank (its FEBRABAN code), generated
// at generated, with the bank's file sequence number fileSeq.
func NewBuilder(bank int64, generated time.Time, fileSeq int64) *Builder {
	b := &Builder{bank: bank}
	h := blankLine().num(1, 3, bank).alpha(4, 7, "0000").alpha(8, 8, "0").
		num(18, 18, 2).num(19, 32, 12345678000195).alpha(33, 52, "CONVENIO123").
		alpha(73, 102, "EMPRESA EXEMPLO LTDA").alpha(103, 132, "BANCO EXEMPLO S.A.").
		alpha(143, 143, "2").alpha(144, 151, generated.Format("02012006")).
		alpha(152, 157, generated.Format("150405")).num(158, 163, fileSeq).alpha(164, 166, "087").alpha(167, 171, "01600")
	b.lines = append(b.lines, h)
	return b
}

// OpenBatch starts the next batch of the collection service.
func (b *Builder) OpenBatch() {
	b.batches++
	b.seq = 0
	h := blankLine().num(1, 3, b.bank).num(4, 7, int64(b.batches)).alpha(8, 8, "1").
		alpha(9, 9, "T").alpha(10, 11, "01").alpha(14, 16, "040").num(18, 18, 2).num(19, 33, 12345678000195).
		alpha(74, 103, "EMPRESA EXEMPLO LTDA")
	b.lines = append(b.lines, h)
	b.batch = 1
}

// Title is one title's segments T and U. Dates are YYYY-MM-DD, "" for
// none (zeros); amounts are cents.
type Title struct {
	Movement          string // código de movimento: "06" settled, "02" registered…
	Agency            int64  // the beneficiary's agency (T 18-22); 1234 when 0
	Account           int64  // the beneficiary's account (T 24-35); 98765 when 0
	OurNumber, DocNum string
	Due               string
	FaceCents         int64
	CompanyRef        string
	PayerKind         int64 // 1 CPF, 2 CNPJ
	PayerDoc          int64
	PayerName         string
	FeeCents          int64
	Reasons           string // motivo da ocorrência (T 214-223): up to five two-digit codes, "61" paid by PIX
	InterestCents     int64
	DiscountCents     int64
	RebateCents       int64
	PaidCents         int64
	CreditedCents     int64
	OccurredOn        string
	CreditedOn        string
}

func (b *Builder) detail(segment string) *line {
	b.seq++
	b.batch++
	return blankLine().num(1, 3, b.bank).num(4, 7, int64(b.batches)).alpha(8, 8, "3").
		num(9, 13, int64(b.seq)).alpha(14, 14, segment)
}

// Add writes a title's segments T and U to the open batch.
func (b *Builder) Add(t Title) {
	agency, account := t.Agency, t.Account
	if agency == 0 {
		agency = 1234
	}
	if account == 0 {
		account = 98765
	}
	tl := b.detail("T").alpha(16, 17, t.Movement).num(18, 22, agency).alpha(23, 23, "5").num(24, 35, account).alpha(36, 36, "1").
		alpha(38, 57, t.OurNumber).alpha(58, 58, "1").alpha(59, 73, t.DocNum).date(74, t.Due).num(82, 96, t.FaceCents).
		num(97, 99, b.bank).num(100, 104, 1234).alpha(105, 105, "5").alpha(106, 130, t.CompanyRef).alpha(131, 132, "09").
		num(133, 133, t.PayerKind).num(134, 148, t.PayerDoc).alpha(149, 188, t.PayerName).num(199, 213, t.FeeCents).
		alpha(214, 223, t.Reasons)
	ul := b.detail("U").alpha(16, 17, t.Movement).num(18, 32, t.InterestCents).num(33, 47, t.DiscountCents).num(48, 62, t.RebateCents).
		num(63, 77, 0).num(78, 92, t.PaidCents).num(93, 107, t.CreditedCents).num(108, 122, 0).num(123, 137, 0).
		date(138, t.OccurredOn).date(146, t.CreditedOn)
	b.lines = append(b.lines, tl, ul)
}

// AddY adds an optional segment Y, which readers count and skip.
func (b *Builder) AddY() {
	b.lines = append(b.lines, b.detail("Y").alpha(16, 17, "01").alpha(18, 19, "03"))
}

// CloseBatch writes the open batch's trailer.
func (b *Builder) CloseBatch() {
	b.batch++
	b.lines = append(b.lines, blankLine().num(1, 3, b.bank).num(4, 7, int64(b.batches)).alpha(8, 8, "5").num(18, 23, int64(b.batch)))
}

// Bytes is the file with its trailer, each record ended by eol.
func (b *Builder) Bytes(eol string) []byte {
	tr := blankLine().num(1, 3, b.bank).alpha(4, 7, "9999").alpha(8, 8, "9").num(18, 23, int64(b.batches)).num(24, 29, int64(len(b.lines)+1))
	var buf bytes.Buffer
	buf.Grow((len(b.lines) + 1) * (lineLen + len(eol)))
	for _, l := range append(b.lines, tr) {
		buf.Write(l[:])
		buf.WriteString(eol)
	}
	return buf.Bytes()
}
