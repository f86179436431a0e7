package reminders

import (
	"embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/template"
	"time"
	"unicode"

	"github.com/cobranca/cobranca/internal/value"
)

// The templates, one file per language and tone, named LANGUAGE.TONE.tmpl; each defines
// "subject" and "body" (text/plain).
//
//go:embed templates/*.tmpl
var templateFiles embed.FS

// Templates are the parsed reminder templates. Customer text reaches them only as the values
// of Message's fields, which text/template writes as they are: a name that looks like a
// template action or like HTML is printed literally, never parsed. They produce text/plain;
// whatever shows it as HTML escapes it there.
type Templates struct {
	byKey map[templateKey]*template.Template
}

type templateKey struct {
	lang Language
	tone Tone
}

// ParseTemplates parses the embedded templates, refusing a set that lacks a language and tone
// or a file that does not define both subject and body.
func ParseTemplates() (*Templates, error) {
	t := &Templates{byKey: map[templateKey]*template.Template{}}
	var errs []error
	for _, lang := range Languages() {
		for _, tone := range Tones() {
			name := string(lang) + "." + string(tone) + ".tmpl"
			tpl, err := template.New(name).Option("missingkey=error").ParseFS(templateFiles, "templates/"+name)
			if err != nil {
				errs = append(errs, fmt.Errorf("reminders: template %s: %w", name, err))
				continue
			}
			for _, part := range []string{"subject", "body"} {
				if tpl.Lookup(part) == nil {
					errs = append(errs, fmt.Errorf("reminders: template %s does not define %q", name, part))
				}
			}
			t.byKey[templateKey{lang, tone}] = tpl
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// Message is what a reminder says: whom it addresses and which invoices it lists.
type Message struct {
	Name     string
	Invoices []Invoice
}

// view is what a template reads: every value already written out as text for its language.
type view struct {
	Name     string
	Count    int
	Total    string
	Invoices []invoiceView
}

type invoiceView struct {
	ID      string
	DueDate string
	Amount  string
}

// Render writes the subject and body of m in lang and tone. Invoices are listed by due date,
// then id; amounts are in BRL as Intl.NumberFormat("pt-BR", {style: "currency", currency:
// "BRL"}) prints them, in both languages (the currency is the real); dates are dd/mm/yyyy in
// pt-BR and "Jan 2, 2006" in en.
func (t *Templates) Render(lang Language, tone Tone, m Message) (subject, body string, err error) {
	tpl := t.byKey[templateKey{lang, tone}]
	if tpl == nil {
		return "", "", fmt.Errorf("reminders: no template for language %q and tone %q", lang, tone)
	}
	v := view{Count: len(m.Invoices)}
	if GreetsByName(m.Name) {
		v.Name = m.Name
	}
	invs := slices.SortedFunc(slices.Values(m.Invoices), func(a, b Invoice) int {
		if c := strings.Compare(a.DueDate, b.DueDate); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var total int64
	for _, inv := range invs {
		date, err := formatDate(lang, inv.DueDate)
		if err != nil {
			return "", "", err
		}
		v.Invoices = append(v.Invoices, invoiceView{ID: inv.ID, DueDate: date, Amount: value.FormatBRL(inv.AmountCents)})
		total += inv.AmountCents
	}
	v.Total = value.FormatBRL(total)
	var sb, bb strings.Builder
	if err := tpl.ExecuteTemplate(&sb, "subject", v); err != nil {
		return "", "", fmt.Errorf("reminders: render subject: %w", err)
	}
	if err := tpl.ExecuteTemplate(&bb, "body", v); err != nil {
		return "", "", fmt.Errorf("reminders: render body: %w", err)
	}
	subject = strings.TrimSpace(sb.String())
	if strings.ContainsAny(subject, "\r\n") {
		return "", "", fmt.Errorf("reminders: template %s: the subject spans lines", tpl.Name())
	}
	return subject, strings.TrimSpace(bb.String()) + "\n", nil
}

// GreetsByName reports whether a reminder to name greets the recipient by it: when the name
// has a letter. A name without one (an account number, a tax id the operator filed as the
// name) has no first name to greet: the templates fall back to a greeting without a name
// ("Olá!", "Prezado(a) cliente,", "Hello,", "Dear customer,").
func GreetsByName(name string) bool {
	return strings.IndexFunc(name, unicode.IsLetter) >= 0
}

// formatDate writes a YYYY-MM-DD date as lang writes dates.
func formatDate(lang Language, s string) (string, error) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return "", fmt.Errorf("reminders: due date: %w", err)
	}
	if lang == PortugueseBR {
		return d.Format("02/01/2006"), nil
	}
	return d.Format("Jan 2, 2006"), nil
}
