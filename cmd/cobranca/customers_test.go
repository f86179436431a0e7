package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/customers"
)

// TestCustomersImport drives `cobranca customers import` on SQLite and on
// PostgreSQL: a good file, a file with bad rows (nothing of it imported, the
// error naming each bad line and column), a second file that creates,
// updates and leaves customers alone; one audit event per run, with counts
// and no names (a refused file: how many rows were bad).
func TestCustomersImport(t *testing.T) {
	for _, dialect := range []string{"sqlite", "postgres"} {
		t.Run(dialect, func(t *testing.T) {
			dir := t.TempDir()
			environ := []string{"COBRANCA_DATA_DIR=" + dir}
			if dialect == "postgres" {
				// An empty database: `cobranca migrate` migrating PostgreSQL is checked here.
				environ = append(environ, "COBRANCA_DATABASE_URL="+pg.Database(t))
			}
			stdin := ""
			cli := func(args ...string) (string, string, error) {
				t.Helper()
				var out, errOut bytes.Buffer
				err := run(context.Background(), args, environ, strings.NewReader(stdin), &out, &errOut)
				return out.String(), errOut.String(), err
			}
			file := func(name, content string) string {
				p := filepath.Join(t.TempDir(), name)
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				return p
			}
			if _, _, err := cli("migrate"); err != nil {
				t.Fatal(err)
			}
			if _, stderr, err := cli("customers", "import"); !errors.Is(err, exitUsage) || !strings.Contains(stderr, "want one FILE") {
				t.Errorf("customers import with no file = %v, %q; want a usage error", err, stderr)
			}

			good := file("good.csv", "\uFEFFname,email,id\r\nPadaria São João,ana@padaria.example,C-1\r\n\"Oficina \"\"Dois\"\"\",bob@oficina.example,C-2\r\n")
			if out, _, err := cli("customers", "import", good); err != nil || out != "imported 2 customer(s): 2 created, 0 updated, 0 unchanged\n" {
				t.Fatalf("import good.csv = %q, %v", out, err)
			}

			bad := file("bad.csv", "id,name,email\nC-1,Padaria Nova,nova@padaria.example\nC-3,Cris,cris\nC-4,,dan@example.com\nC-1,Again,again@example.com\n")
			out, _, err := cli("customers", "import", bad)
			want := "invalid_arguments: nothing imported: 3 bad row(s)\n" +
				"  line 3, column email: must be a bare e-mail address (local@domain), with no display name, angle brackets or comment\n" +
				"  line 4, column name: must not be empty\n" +
				"  line 5, column id: repeats the id of line 2"
			if err == nil || err.Error() != want || out != "" {
				t.Errorf("import bad.csv = %q, %v; want\n%s", out, err, want)
			}

			stdin = "id,email,name\nC-1,ana@padaria.example,Padaria São João\nC-2,contas@oficina.example,Oficina Dois Irmãos\nC-5,eva@example.com,Eva\n"
			if out, _, err := cli("customers", "import", "-"); err != nil || out != "imported 3 customer(s): 1 created, 1 updated, 1 unchanged\n" {
				t.Fatalf("import - (stdin) = %q, %v", out, err)
			}

			// What is stored: the bad file's changes to C-1 and its new customers are absent.
			cfg := mustConfig(t, environ)
			db, err := openStore(context.Background(), cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for id, want := range map[string]string{"C-1": "Padaria São João <ana@padaria.example>", "C-2": "Oficina Dois Irmãos <contas@oficina.example>", "C-5": "Eva <eva@example.com>"} {
				c, err := customers.Get(context.Background(), db, id)
				if err != nil {
					t.Fatalf("Get(%s) = %v", id, err)
				}
				if got := c.Name + " <" + c.Email + ">"; got != want || c.Status != customers.Contactable {
					t.Errorf("customer %s = %q %s, want %q contactable", id, got, c.Status, want)
				}
			}
			for _, id := range []string{"C-3", "C-4"} {
				if _, err := customers.Get(context.Background(), db, id); !errors.Is(err, customers.ErrNotFound) {
					t.Errorf("Get(%s) after the refused file = %v, want ErrNotFound", id, err)
				}
			}

			// One event per run, counts only.
			key, err := auditKey(cfg, false)
			if err != nil {
				t.Fatal(err)
			}
			l, err := auditlog.New(db, key, auditlog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Seal(context.Background()); err != nil {
				t.Fatal(err)
			}
			evs, err := l.Events(context.Background(), 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			subject := operator()
			type ev struct {
				Name, Subject, ClientID string
				Outcome                 auditlog.Outcome
				FailureCode             string
				Details                 map[string]int64
			}
			var got []ev
			for _, e := range evs {
				got = append(got, ev{e.Name, e.Subject, e.ClientID, e.Outcome, e.FailureCode, e.Details})
				for _, name := range []string{"Padaria", "Oficina", "Eva", "example"} {
					if strings.Contains(fmt.Sprintf("%+v", e), name) {
						t.Errorf("audit event %+v holds customer data %q", e, name)
					}
				}
			}
			wantEvents := []ev{
				{"customers.imported", subject, cliClientID, auditlog.Allowed, "", map[string]int64{"rows": 2, "created": 2, "updated": 0, "unchanged": 0, "draftsDiscarded": 0}},
				{"customers.imported", subject, cliClientID, auditlog.Rejected, "invalid_arguments", map[string]int64{"badRows": 3}},
				{"customers.imported", subject, cliClientID, auditlog.Allowed, "", map[string]int64{"rows": 3, "created": 1, "updated": 1, "unchanged": 1, "draftsDiscarded": 0}},
			}
			if diff := cmp.Diff(wantEvents, got); diff != "" {
				t.Errorf("audit events (-want +got):\n%s", diff)
			}
			if out, _, err := cli("audit", "verify"); err != nil || !strings.HasPrefix(out, "OK 3 events") {
				t.Errorf("audit verify = %q, %v", out, err)
			}
		})
	}
}
