package reminders_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/reminders"
)

var update = flag.Bool("update", false, "rewrite the golden renderings under testdata/")

// TestRenderGolden: the four renderings (language × tone) of one reminder, byte for byte:
// amounts as Intl.NumberFormat("pt-BR", {style: "currency", currency: "BRL"}) prints them (a
// no-break space after R$), dates dd/mm/yyyy in pt-BR, each invoice by due date and the total.
// Regenerate with go test ./internal/reminders -run TestRenderGolden -update, and read the diff.
func TestRenderGolden(t *testing.T) {
	tpl := templates(t)
	m := reminders.Message{Name: "Padaria Pão Quente Ltda.", Invoices: []reminders.Invoice{
		{ID: "NF-2026-0042", DueDate: "2026-06-05", AmountCents: 123456},
		{ID: "NF-2026-0007", DueDate: "2026-04-30", AmountCents: 5},
		{ID: "NF-2026-0100", DueDate: "2026-06-05", AmountCents: 1_000_000_000_000},
	}}
	for _, lang := range reminders.Languages() {
		for _, tone := range reminders.Tones() {
			name := string(lang) + "." + string(tone)
			t.Run(name, func(t *testing.T) {
				r, err := tpl.Render(lang, tone, m)
				if err != nil {
					t.Fatal(err)
				}
				got := "Subject: " + r.Subject + "\n\n" + r.Text
				path := filepath.Join("testdata", name+".golden")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(string(want), got); diff != "" {
					t.Errorf("Render(%s, %s) (-want +got):\n%s", lang, tone, diff)
				}
			})
		}
	}
}

// TestRenderOne: one invoice is written in the singular.
func TestRenderOne(t *testing.T) {
	tpl := templates(t)
	m := reminders.Message{Name: "Ana", Invoices: []reminders.Invoice{{ID: "NF-1", DueDate: "2026-02-28", AmountCents: 200000}}}
	for _, tc := range []struct {
		lang     reminders.Language
		tone     reminders.Tone
		subject  string
		bodyHave string
	}{
		{reminders.PortugueseBR, reminders.Friendly, "Lembrete: 1 fatura em aberto, total de R$\u00a02.000,00", "- Fatura NF-1, vencimento em 28/02/2026: R$\u00a02.000,00\n"},
		{reminders.PortugueseBR, reminders.Firm, "Aviso de pagamento pendente: 1 fatura, total de R$\u00a02.000,00", "a fatura abaixo:"},
		{reminders.English, reminders.Friendly, "Friendly reminder: 1 open invoice totaling R$\u00a02.000,00", "- Invoice NF-1, due Feb 28, 2026: R$\u00a02.000,00\n"},
		{reminders.English, reminders.Firm, "Payment required: 1 open invoice totaling R$\u00a02.000,00", "the invoice below as unpaid"},
	} {
		r, err := tpl.Render(tc.lang, tc.tone, m)
		if err != nil {
			t.Fatal(err)
		}
		subject, body := r.Subject, r.Text
		if subject != tc.subject || !strings.Contains(body, tc.bodyHave) {
			t.Errorf("Render(%s, %s) = %q, %q; want subject %q and a body with %q", tc.lang, tc.tone, subject, body, tc.subject, tc.bodyHave)
		}
	}
}

// TestRenderCustomerTextIsData: a name or invoice id that looks like a template action, HTML or
// a header comes out exactly as given, in every template: the rendering is the one of a plain
// placeholder with the text put in its place, nothing of it read, escaped or dropped.
func TestRenderCustomerTextIsData(t *testing.T) {
	tpl := templates(t)
	const placeholder = "PLACEHOLDER"
	message := func(s string) reminders.Message {
		return reminders.Message{Name: s, Invoices: []reminders.Invoice{{ID: s, DueDate: "2026-02-28", AmountCents: 1}}}
	}
	for _, text := range []string{
		`{{.Secret}}`,
		`{{template "body" .}}`,
		`{{define "subject"}}pwned{{end}}`,
		`<script>alert("x")</script> & <b>Bold</b>`,
		`{{printf "%s" .Name}} {{/* c */}} {{- . -}}`,
		`Bcc: mallory@example.com`,
	} {
		for _, lang := range reminders.Languages() {
			for _, tone := range reminders.Tones() {
				want, err := tpl.Render(lang, tone, message(placeholder))
				if err != nil {
					t.Fatal(err)
				}
				wantSubject, wantBody := want.Subject, want.Text
				if strings.Count(wantBody, placeholder) != 2 {
					t.Fatalf("Render(%s, %s): the body holds the name and the invoice id %d times, want 2", lang, tone, strings.Count(wantBody, placeholder))
				}
				wantBody = strings.ReplaceAll(wantBody, placeholder, text)
				got, err := tpl.Render(lang, tone, message(text))
				if err != nil {
					t.Fatalf("Render(%s, %s) of %q: %v", lang, tone, text, err)
				}
				subject, body := got.Subject, got.Text
				if subject != wantSubject || body != wantBody {
					t.Errorf("Render(%s, %s) of %q = %q, %q; want %q, %q", lang, tone, text, subject, body, wantSubject, wantBody)
				}
			}
		}
	}
}

// TestParseTemplatesComplete: every language and tone has a template defining subject and body
// (ParseTemplates refuses a set that lacks one; here, the embedded set is complete).
func TestParseTemplatesComplete(t *testing.T) {
	tpl := templates(t)
	for _, lang := range reminders.Languages() {
		for _, tone := range reminders.Tones() {
			if _, err := tpl.Render(lang, tone, reminders.Message{Name: "x", Invoices: []reminders.Invoice{{ID: "1", DueDate: "2026-01-01", AmountCents: 1}}}); err != nil {
				t.Errorf("Render(%s, %s): %v", lang, tone, err)
			}
		}
	}
	if _, err := tpl.Render("fr", reminders.Friendly, reminders.Message{}); err == nil {
		t.Error("Render(fr) succeeded; want an error: there is no French template")
	}
}
