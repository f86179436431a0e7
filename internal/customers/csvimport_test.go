package customers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

func TestParseCSV(t *testing.T) {
	got, err := customers.ParseCSV(strings.NewReader("\uFEFFemail,id,name\r\n" +
		"ana@padaria.example,C-1,Padaria São João\r\n" +
		"\"bob@oficina.example\",C-2,\"Oficina \"\"Dois\"\", Irmãos\"\r\n" +
		"cris@example.com,C-3,\"{{.Secret}} <script>\"\n" +
		"dan@example.com,@C-4,\"=HYPERLINK(\"\"https://evil.example\"\",\"\"pay\"\")\"\n" +
		"eva@example.com,-C-5,+cmd|' /C calc'!A0\n"))
	if err != nil {
		t.Fatalf("ParseCSV = %v", err)
	}
	want := []customers.Record{
		{ID: "C-1", Name: "Padaria São João", Email: "ana@padaria.example"},
		{ID: "C-2", Name: `Oficina "Dois", Irmãos`, Email: "bob@oficina.example"},
		{ID: "C-3", Name: "{{.Secret}} <script>", Email: "cris@example.com"},
		// What a spreadsheet would read as a formula is data, kept as written (README: an export must neutralize it).
		{ID: "@C-4", Name: `=HYPERLINK("https://evil.example","pay")`, Email: "dan@example.com"},
		{ID: "-C-5", Name: "+cmd|' /C calc'!A0", Email: "eva@example.com"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseCSV (-want +got):\n%s", diff)
	}
	if got, err := customers.ParseCSV(strings.NewReader("id,name,email\n")); err != nil || len(got) != 0 {
		t.Errorf("ParseCSV(header only) = %v, %v; want no customers", got, err)
	}
}

// TestParseCSVBadRows: each kind of bad file or row is refused as a whole,
// naming the line (and column) of every bad row, never its value.
func TestParseCSVBadRows(t *testing.T) {
	const head = "id,name,email\n"
	const good = "C-1,Ana,ana@example.com\n"
	for _, tc := range []struct {
		name string
		file string
		want []string // the RowErrors, as String prints them
	}{
		{"empty file", "", []string{"line 1: " + wantHeader}},
		{"missing column", "id,name\nC-1,Ana\n", []string{"line 1, column email: is missing: " + wantHeader}},
		{"extra column", "id,name,email,phone\nC-1,Ana,ana@example.com,555\n", []string{"line 1, column 4: is not a column of a customer file: " + wantHeader}},
		{"header case", "ID,name,email\n", []string{"line 1, column 1: is not a column of a customer file: " + wantHeader}},
		{"column twice", "id,name,email,id\n", []string{"line 1, column 4: names id again, as column 1 does"}},
		// A header cell may be a customer's data: the messages name it by position only.
		{"no header", "C-40,Bob,bob@example.com\n" + good, []string{"line 1, column 1: is not a column of a customer file: " + wantHeader}},
		{"CR line ends", "id,name,email\rC-43,Bob,bob@example.com\r", []string{
			"line 1, column 3: holds a carriage return: lines must end in LF or CR LF, not in CR alone; " + wantHeader}},
		{"header with data", "id,Bob Silva,email\n", []string{"line 1, column 2: is not a column of a customer file: " + wantHeader}},
		{"too few fields", head + good + "C-2,Bob\n", []string{"line 3: wrong number of fields: want one per header column (at byte 1 of line 3)"}},
		{"too many fields", head + "C-2,Bob,bob@example.com,x\n" + good, []string{"line 2: wrong number of fields: want one per header column (at byte 1 of line 2)"}},
		{"bare quote", head + good + "C-2,Bo\"b,bob@example.com\n", []string{`line 3: bare " in non-quoted-field (at byte 7 of line 3)`}},
		{"blank id", head + good + " ,Bob,bob@example.com\n", []string{"line 3, column id: must not be blank: it has only white space or invisible characters"}},
		{"empty name", head + "C-2,,bob@example.com\n" + good, []string{"line 2, column name: must not be empty"}},
		{"bidi name", head + "C-2,Bob\u202e,bob@example.com\n", []string{"line 2, column name: must not contain U+202E, an invisible or formatting character that can hide or reorder text (zero-width, default-ignorable, format or bidirectional control, variation selector, tag, line or paragraph separator)"}},
		{"invalid UTF-8", head + "C-2,Bob\xff,bob@example.com\n", []string{"line 2, column name: must be valid UTF-8"}},
		{"display name", head + "C-2,Bob,Bob <bob@example.com>\n", []string{"line 2, column email: must be a bare e-mail address (local@domain), with no display name, angle brackets or comment"}},
		{"no e-mail", head + "C-2,Bob,\n", []string{"line 2, column email: must not be empty"}},
		{"duplicate id", head + good + "C-2,Bob,bob@example.com\nC-1,Ana Maria,ana@example.com\n", []string{"line 4, column id: repeats the id of line 2"}},
		{"multi-line name counts lines", head + "C-2,\"Bob\nJr\",bob@example.com\nC-3,Cris,\n", []string{
			"line 2, column name: must not contain control characters",
			"line 4, column email: must not be empty",
		}},
		{"every bad row", head + "C-2,,bob@example.com\n" + good + "C-3,Cris,cris\nC-1,Ana,ana@example.com\n", []string{
			"line 2, column name: must not be empty",
			"line 4, column email: must be a bare e-mail address (local@domain), with no display name, angle brackets or comment",
			"line 5, column id: repeats the id of line 3",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := customers.ParseCSV(strings.NewReader(tc.file))
			var ie *customers.ImportError
			if !errors.As(err, &ie) || recs != nil {
				t.Fatalf("ParseCSV = %v, %v; want an *ImportError and no customers", recs, err)
			}
			var got []string
			for _, r := range ie.Rows {
				got = append(got, r.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("bad rows (-want +got):\n%s", diff)
			}
			for _, secret := range []string{"Bob", "bob@example.com", "Cris", "555", "C-4", "phone"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q holds the value %q", err, secret)
				}
			}
		})
	}
}

// wantHeader is what the messages about a header say it must be.
const wantHeader = "want a header naming exactly the columns id, name and email (lower case, no spaces), in any order"

// TestImportErrorBadRows: an ImportError counts every bad row, those it
// lists and those beyond; that count is what a refused import is audited
// with.
func TestImportErrorBadRows(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name,email\n")
	for i := range 25 {
		fmt.Fprintf(&b, "C-%d,,c%d@example.com\n", i, i)
	}
	_, err := customers.ParseCSV(strings.NewReader(b.String()))
	var ie *customers.ImportError
	if !errors.As(err, &ie) || len(ie.Rows) != 20 || ie.BadRows() != 25 || !strings.HasPrefix(err.Error(), "nothing imported: 25 bad row(s)") {
		t.Fatalf("ParseCSV(25 bad rows) = %v; want 20 listed, BadRows 25", err)
	}
}

func TestParseCSVBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("id,name,email\n")
	for i := range customers.MaxImportRows + 1 {
		fmt.Fprintf(&b, "C-%d,Name %d,c%d@example.com\n", i, i, i)
	}
	_, err := customers.ParseCSV(strings.NewReader(b.String()))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("line %d: the file has more than %d customers", customers.MaxImportRows+2, customers.MaxImportRows)) {
		t.Errorf("ParseCSV(%d rows) = %v, want refused at the row past the bound", customers.MaxImportRows+1, err)
	}
	big := "id,name,email\n" + strings.Repeat("C-1,"+strings.Repeat("a", 200)+",a@example.com\n", customers.MaxImportBytes/200)
	if _, err := customers.ParseCSV(strings.NewReader(big)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("ParseCSV(%d bytes) = %v, want refused for its size", len(big), err)
	}
}

func TestImport(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		upsert(t, db, customers.Record{ID: "C-1", Name: "Ana", Email: "ana@example.com"}, t0)
		upsert(t, db, customers.Record{ID: "C-2", Name: "Bob", Email: "bob@example.com"}, t0)
		if _, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Customer, error) {
			return customers.SetStatus(ctx, tx, "C-2", customers.Change{Status: customers.DoNotContact, Reason: "asked", SetBy: "u"}, t0)
		}); err != nil {
			t.Fatal(err)
		}
		recs, err := customers.ParseCSV(strings.NewReader("id,name,email\nC-1,Ana,ana@example.com\nC-2,Bob Silva,bob@example.com\nC-3,Cris,cris@example.com\n"))
		if err != nil {
			t.Fatal(err)
		}
		now := t0.Add(time.Hour)
		n, err := inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Counts, error) {
			return customers.Import(ctx, tx, recs, now)
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := (customers.Counts{Created: 1, Updated: 1, Unchanged: 1}); n != want {
			t.Errorf("Import = %+v, want %+v", n, want)
		}
		if c := get(t, db, "C-2"); c.Name != "Bob Silva" || c.Status != customers.DoNotContact {
			t.Errorf("C-2 after import = %+v, want the new name and its status kept", c)
		}
		if c := get(t, db, "C-3"); c.Status != customers.Contactable || !c.CreatedAt.Equal(now) {
			t.Errorf("C-3 after import = %+v, want created contactable", c)
		}

		// A failure part way through rolls the whole import back.
		_, err = inTx(t, db, func(ctx context.Context, tx store.Tx) (customers.Counts, error) {
			return customers.Import(ctx, tx, []customers.Record{{ID: "C-4", Name: "Dan", Email: "dan@example.com"}, {ID: "C-5", Name: "", Email: "e@example.com"}}, now)
		})
		if err == nil {
			t.Fatal("Import of an invalid record succeeded")
		}
		if _, err := customers.Get(ctx, db, "C-4"); !errors.Is(err, customers.ErrNotFound) {
			t.Errorf("C-4 after a failed import: %v, want ErrNotFound", err)
		}
	})
}
