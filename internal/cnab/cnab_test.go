package cnab

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/cnab/cnabtest"
	"github.com/cobranca/cobranca/internal/golden"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var generated = time.Date(2026, 11, 30, 7, 15, 42, 0, time.UTC)

// sample is a return file of two batches: a PIX-era boleto paid with
// interest, one paid with a discount, one registered (not paid), a
// settlement after write-off, and an optional segment Y.
func sample() *cnabtest.Builder {
	b := cnabtest.NewBuilder(341, generated, 42)
	b.OpenBatch()
	b.Add(cnabtest.Title{Movement: "06", OurNumber: "00012345", DocNum: "NF-1001", Due: "2026-11-20", FaceCents: 150000,
		CompanyRef: "inv-1001", PayerKind: 2, PayerDoc: 11222333000181, PayerName: "ACME COMERCIO LTDA",
		FeeCents: 350, Reasons: "  04", InterestCents: 1530, PaidCents: 151530, CreditedCents: 151180, OccurredOn: "2026-11-28", CreditedOn: "2026-11-30"})
	b.AddY()
	b.Add(cnabtest.Title{Movement: "06", OurNumber: "00012346", DocNum: "NF-1002", Due: "2026-12-05", FaceCents: 80000,
		CompanyRef: "inv-1002", PayerKind: 1, PayerDoc: 1234567890, PayerName: "MARIA DA SILVA",
		FeeCents: 350, Reasons: "61", DiscountCents: 4000, PaidCents: 76000, CreditedCents: 75650, OccurredOn: "2026-11-29", CreditedOn: "2026-11-30"})
	b.CloseBatch()
	b.OpenBatch()
	b.Add(cnabtest.Title{Movement: "02", OurNumber: "00012347", DocNum: "NF-1003", Due: "2026-12-20", FaceCents: 99999,
		CompanyRef: "inv-1003", PayerKind: 2, PayerDoc: 11222333000181, PayerName: "ACME COMERCIO LTDA"})
	b.Add(cnabtest.Title{Movement: "17", OurNumber: "00012340", DocNum: "NF-0999", Due: "2026-10-01", FaceCents: 10000,
		CompanyRef: "", PayerKind: 1, PayerDoc: 98765432100, PayerName: "JOSE PEREIRA", PaidCents: 10000, CreditedCents: 10000,
		OccurredOn: "2026-11-27", CreditedOn: ""})
	b.CloseBatch()
	return b
}

func TestReadGolden(t *testing.T) {
	raw := sample().Bytes("\r\n")
	path := filepath.Join("testdata", "retorno-341.ret")
	if *update {
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, raw) {
		t.Fatalf("%s is not what the builder writes; run go test -update", path)
	}
	// A few spans checked by hand against the layout, so that the builder
	// and the reader cannot share a mistake: line 4 is the first segment
	// U, whose valor pago is positions 78-92.
	lines := strings.Split(string(file), "\r\n")
	if got := lines[3][77:92]; got != "000000000151530" {
		t.Fatalf("valor pago (U 78-92) = %q, want 000000000151530", got)
	}
	if got := lines[2][37:57]; got != "00012345            " {
		t.Fatalf("nosso número (T 38-57) = %q", got)
	}
	if got := lines[2][73:81]; got != "20112026" {
		t.Fatalf("vencimento (T 74-81) = %q", got)
	}
	f, err := Read(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	golden.JSON(t, filepath.Join("testdata", "retorno-341.json"), f, *update)
	if f.Batches[0].Titles[0].PaidCents != 151530 || !f.Batches[0].Titles[0].Settled() {
		t.Errorf("first title = %+v", f.Batches[0].Titles[0])
	}
	if got := f.Batches[0].Titles[1].PayerDocument; got != "01234567890" {
		t.Errorf("a CPF with a leading zero reads %q, want 01234567890", got)
	}
	if f.Batches[1].Titles[0].Settled() {
		t.Error("movement 02 (registered) reads as settled")
	}
	// Segment T 214-223 holds five codes of two: "  04" is one code, 04.
	if got := lines[2][213:223]; got != "  04      " {
		t.Fatalf("motivo da ocorrência (T 214-223) = %q", got)
	}
	for i, want := range []bool{false, true} {
		if got := f.Batches[0].Titles[i].PaidByPIX(); got != want {
			t.Errorf("title %d (reasons %q) PaidByPIX = %v, want %v", i, f.Batches[0].Titles[i].Reasons, got, want)
		}
	}
	if got := f.Batches[0].Titles[0].Account; got != "0123450000000987651" {
		t.Errorf("agência e conta (T 18-37) = %q", got)
	}
}

// The same records with LF endings, no final newline, a DOS end-of-file
// mark, or Latin-1 or UTF-8 accents read the same.
func TestReadEncodings(t *testing.T) {
	want, err := Read(bytes.NewReader(sample().Bytes("\n")))
	if err != nil {
		t.Fatal(err)
	}
	for name, raw := range map[string][]byte{
		"crlf":        sample().Bytes("\r\n"),
		"no final lf": bytes.TrimSuffix(sample().Bytes("\n"), []byte("\n")),
		"eof mark":    append(sample().Bytes("\r\n"), 0x1a),
	} {
		got, err := Read(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}

	b := cnabtest.NewBuilder(1, generated, 1)
	b.OpenBatch()
	b.Add(cnabtest.Title{Movement: "06", OurNumber: "1", Due: "2026-11-20", FaceCents: 100, PayerKind: 1, PayerDoc: 1, PayerName: "JOAO CONCEICAO", PaidCents: 100, OccurredOn: "2026-11-21"})
	b.CloseBatch()
	ascii := b.Bytes("\n")
	at := bytes.Index(ascii, []byte("CONCEICAO"))
	latin1 := bytes.Clone(ascii)
	latin1[at+6] = 0xc7 // Ç in Latin-1, one byte
	latin1[at+7] = 0xc3 // Ã
	utf := append(append(bytes.Clone(ascii[:at+6]), "ÇÃ"...), ascii[at+8:]...)
	for name, raw := range map[string][]byte{"latin-1": latin1, "utf-8": utf} {
		f, err := Read(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := f.Batches[0].Titles[0].PayerName; got != "JOAO CONCEIÇÃO" {
			t.Errorf("%s: payer name %q", name, got)
		}
	}
}

// Every malformed record is refused by its line and field, and the error
// never quotes what the field held.
func TestReadRefuses(t *testing.T) {
	type edit func(lines [][]byte) [][]byte
	set := func(line, from int, s string) edit {
		return func(ls [][]byte) [][]byte { copy(ls[line-1][from-1:], s); return ls }
	}
	cases := []struct {
		name      string
		edit      edit
		line      int
		field     string
		reasonHas string
	}{
		{"remessa, not retorno", set(1, 143, "1"), 1, "código remessa/retorno (143)", "not a return file"},
		{"header record type", set(1, 8, "1"), 1, "tipo de registro (8)", `must be "0"`},
		{"generation date invalid", set(1, 144, "31022026"), 1, "data de geração (144-151)", "not a date"},
		{"generation date missing", set(1, 144, "00000000"), 1, "data de geração (144-151)", "required"},
		{"generation time", set(1, 152, "256100"), 1, "hora de geração (152-157)", "not a time"},
		{"letters in the file sequence", set(1, 158, "00A042"), 1, "número sequencial do arquivo (158-163)", "digits"},
		{"batch not a return", set(2, 9, "R"), 2, "tipo de operação (9)", "not a return batch"},
		{"batch of another service", set(2, 10, "03"), 2, "tipo de serviço (10-11)", "collection"},
		{"batch out of order", set(2, 4, "0002"), 2, "lote de serviço (4-7)", "numbered in order"},
		{"another bank", set(3, 1, "237"), 3, "código do banco (1-3)", "file header"},
		{"detail of another batch", set(3, 4, "0007"), 3, "lote de serviço (4-7)", "batch header"},
		{"sequence skipped", set(4, 9, "00003"), 4, "número sequencial do registro no lote (9-13)", "must be 2"},
		{"face value with a comma", set(3, 82, "0000000001500,0"), 3, "valor nominal do título (T 82-96)", "digits"},
		{"due date 31 April", set(3, 74, "31042026"), 3, "data de vencimento (T 74-81)", "not a date"},
		{"paid with a space", set(4, 78, "00000000015 530"), 4, "valor pago (U 78-92)", "digits"},
		{"occurrence month 13", set(4, 138, "01132026"), 4, "data da ocorrência (U 138-145)", "not a date"},
		{"control character in a name", set(3, 150, "\x07"), 3, "nome do pagador (T 149-188)", "control character"},
		{"segment T without U", set(4, 14, "Y"), 3, "código de segmento (14)", "followed by its segment U"},
		{"segment U alone", set(5, 14, "U"), 5, "código de segmento (14)", "must follow a segment T"},
		{"batch trailer count", set(8, 18, "000099"), 8, "quantidade de registros do lote (18-23)", "says 99, the batch has 7"},
		{"file trailer batches", set(15, 18, "000003"), 15, "quantidade de lotes do arquivo (18-23)", "says 3"},
		{"file trailer records", set(15, 24, "000016"), 15, "quantidade de registros do arquivo (24-29)", "says 16, the file has 15"},
		{"file trailer batch number", set(15, 4, "0000"), 15, "lote de serviço (4-7)", `"9999"`},
		{"short line", func(ls [][]byte) [][]byte { ls[5] = ls[5][:239]; return ls }, 6, "", "240 characters"},
		{"long line", func(ls [][]byte) [][]byte { ls[5] = append(ls[5], ' '); return ls }, 6, "", "240 characters"},
		{"blank line inside", func(ls [][]byte) [][]byte { return append(ls[:5], append([][]byte{{}}, ls[5:]...)...) }, 6, "", "blank line"},
		{"batch trailer missing", func(ls [][]byte) [][]byte { return append(ls[:7], ls[8:]...) }, 8, "tipo de registro (8)", "batch trailer"},
		{"file trailer missing", func(ls [][]byte) [][]byte { return ls[:14] }, 15, "", "file trailer"},
		{"record after the trailer", func(ls [][]byte) [][]byte { return append(ls, bytes.Clone(ls[2])) }, 16, "", "after the file trailer"},
	}
	base := sample().Bytes("\n")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls := bytes.Split(bytes.TrimSuffix(bytes.Clone(base), []byte("\n")), []byte("\n"))
			for i := range ls {
				ls[i] = bytes.Clone(ls[i])
			}
			raw := append(bytes.Join(c.edit(ls), []byte("\n")), '\n')
			f, err := Read(bytes.NewReader(raw))
			if err == nil {
				t.Fatalf("Read accepted it: %+v", f)
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("err = %T %v, want Errors", err, err)
			}
			first := errs[0]
			if first.Line != c.line || first.Field != c.field || !strings.Contains(first.Reason, c.reasonHas) {
				t.Fatalf("first error = line %d field %q reason %q; want line %d field %q reason containing %q (all: %v)",
					first.Line, first.Field, first.Reason, c.line, c.field, c.reasonHas, err)
			}
			for _, secret := range []string{"ACME", "MARIA", "00012345", "151530", "CONVENIO"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("the error quotes the file's content %q: %v", secret, err)
				}
			}
		})
	}
}

func TestReadBounds(t *testing.T) {
	if _, err := Read(strings.NewReader("")); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := Read(strings.NewReader(strings.Repeat("9", 5000))); err == nil || !strings.Contains(err.Error(), "240 characters") {
		t.Errorf("one huge line: %v", err)
	}
	var many bytes.Buffer
	for range maxErrors + 10 {
		many.WriteString("short\n")
	}
	_, err := Read(&many)
	var errs Errors
	if !errors.As(err, &errs) || len(errs) != maxErrors {
		t.Errorf("a file of bad lines reports %d errors, want %d", len(errs), maxErrors)
	}
}

// Random files written by the builder read back as written.
func TestReadRandomFiles(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		b := cnabtest.NewBuilder(int64(r.IntN(999)+1), generated.Add(time.Duration(r.IntN(1e6))*time.Second), int64(r.IntN(999999)))
		var want [][]cnabtest.Title
		for range r.IntN(4) + 1 {
			b.OpenBatch()
			var ts []cnabtest.Title
			for range r.IntN(6) {
				day := func() string {
					if r.IntN(5) == 0 {
						return ""
					}
					return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(700)).Format(time.DateOnly)
				}
				tt := cnabtest.Title{Movement: []string{"02", "06", "09", "17"}[r.IntN(4)], OurNumber: fmt.Sprint(r.IntN(1e9)),
					DocNum: fmt.Sprintf("D%d", r.IntN(1e6)), Due: day(), FaceCents: r.Int64N(1e13), CompanyRef: fmt.Sprintf("ref-%d", r.IntN(1e6)),
					PayerKind: 2, PayerDoc: r.Int64N(1e14), PayerName: "PAGADOR", FeeCents: r.Int64N(1e5), InterestCents: r.Int64N(1e6),
					DiscountCents: r.Int64N(1e6), RebateCents: r.Int64N(1e6), PaidCents: r.Int64N(1e13), CreditedCents: r.Int64N(1e13), OccurredOn: day(), CreditedOn: day()}
				b.Add(tt)
				ts = append(ts, tt)
				if r.IntN(4) == 0 {
					b.AddY()
				}
			}
			b.CloseBatch()
			want = append(want, ts)
		}
		f, err := Read(bytes.NewReader(b.Bytes("\r\n")))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Batches) != len(want) {
			t.Fatalf("%d batches, want %d", len(f.Batches), len(want))
		}
		for i, ts := range want {
			if len(f.Batches[i].Titles) != len(ts) {
				t.Fatalf("batch %d: %d titles, want %d", i, len(f.Batches[i].Titles), len(ts))
			}
			for j, w := range ts {
				g := f.Batches[i].Titles[j]
				if g.Movement != w.Movement || g.OurNumber != w.OurNumber || g.DocumentNumber != w.DocNum || g.DueDate != w.Due ||
					g.FaceValueCents != w.FaceCents || g.CompanyReference != w.CompanyRef || g.PayerDocument != fmt.Sprintf("%014d", w.PayerDoc) ||
					g.FeeCents != w.FeeCents || g.InterestCents != w.InterestCents || g.DiscountCents != w.DiscountCents || g.RebateCents != w.RebateCents ||
					g.PaidCents != w.PaidCents || g.CreditedCents != w.CreditedCents || g.OccurredOn != w.OccurredOn || g.CreditedOn != w.CreditedOn {
					t.Fatalf("title read as %+v, written as %+v", g, w)
				}
			}
		}
	}
}

func FuzzRead(f *testing.F) {
	f.Add(sample().Bytes("\r\n"))
	f.Add(sample().Bytes("\n")[:LineLen*3])
	f.Add([]byte("0\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		file, err := Read(bytes.NewReader(raw))
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 || len(errs) > maxErrors {
				t.Fatalf("err = %v, want 1..%d line errors", err, maxErrors)
			}
			for _, e := range errs {
				if e.Reason == "" {
					t.Fatalf("an error without a reason: %+v", e)
				}
			}
			return
		}
		// What is accepted holds the layout's invariants.
		if len(file.Bank) != 3 || file.GeneratedAt.IsZero() {
			t.Fatalf("accepted a file without bank or date: %+v", file)
		}
		for _, b := range file.Batches {
			for _, tt := range b.Titles {
				for _, v := range []int64{tt.FaceValueCents, tt.PaidCents, tt.CreditedCents, tt.FeeCents} {
					if v < 0 || v >= 1e15 {
						t.Fatalf("amount %d out of the layout's range", v)
					}
				}
				for _, d := range []string{tt.DueDate, tt.OccurredOn, tt.CreditedOn} {
					if d != "" {
						if _, err := time.Parse(time.DateOnly, d); err != nil {
							t.Fatalf("date %q", d)
						}
					}
				}
			}
		}
	})
}
