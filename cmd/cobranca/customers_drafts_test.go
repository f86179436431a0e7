package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// TestCustomersImportDiscardsStaleDrafts: an import that changes a customer's name or e-mail
// address discards the customer's open drafts written to the old ones, as prepare_reminder's
// overwrite does — a reminder must not go, once approved, to an address the finance team has
// just corrected. A draft to the (unchanged) recipient stays open.
func TestCustomersImportDiscardsStaleDrafts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	environ := []string{"COBRANCA_DATA_DIR=" + dir}
	cli := func(args ...string) string {
		t.Helper()
		return mustRun(t, environ, args...)
	}
	file := func(content string) string {
		p := filepath.Join(t.TempDir(), "c.csv")
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cli("migrate")
	cli("customers", "import", file("id,name,email\nc-1,Ana Ltda,ana@velho.example\nc-2,Bia,bia@cliente.example\n"))

	db, err := sqlite.Open(ctx, filepath.Join(dir, sqlite.FileName), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	draft := func(id, name, email string) string {
		r, _, err := reminders.Prepare(ctx, db, tpl, reminders.Request{CustomerID: id, To: reminders.Recipient{Name: name, Email: email},
			Tone: reminders.Friendly, Language: reminders.PortugueseBR, Invoices: []reminders.Invoice{{ID: "inv-1", DueDate: "2026-11-01", AmountCents: 100}},
			CreatedBy: "alice"}, now)
		if err != nil {
			t.Fatal(err)
		}
		return r.ID
	}
	stale, kept := draft("c-1", "Ana Ltda", "ana@velho.example"), draft("c-2", "Bia", "bia@cliente.example")

	out := cli("customers", "import", file("id,name,email\nc-1,Ana Ltda,ana@novo.example\nc-2,Bia,bia@cliente.example\n"))
	if !strings.Contains(out, "1 open reminder draft(s) to an old name or address discarded") {
		t.Errorf("import printed %q, want the discarded draft counted", out)
	}
	for id, want := range map[string]reminders.State{stale: reminders.Discarded, kept: reminders.Draft} {
		r, err := reminders.Get(ctx, db, id)
		if err != nil {
			t.Fatal(err)
		}
		if r.State != want {
			t.Errorf("draft %s to %s is %s after the import, want %s", id, r.To.Email, r.State, want)
		}
	}
}
