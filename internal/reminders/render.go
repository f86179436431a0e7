package reminders

import (
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode"

	"github.com/cobranca/cobranca/internal/boleto"
	"github.com/cobranca/cobranca/internal/value"
)

// The templates, two files per language and tone: LANGUAGE.TONE.tmpl (text/template) defines
// "subject" (one line) and "body" (text/plain); LANGUAGE.TONE.html.tmpl (html/template)
// defines "html", the same message as an HTML document.
//
//go:embed templates/*.tmpl
var templateFiles embed.FS

// Templates are the parsed reminder templates. Customer text reaches them only as the values
// of Message's fields. text/template writes them as they are: a name that looks like a
// template action or like HTML is printed literally, never parsed, in the text/plain part.
// html/template escapes them for where they stand, so that in the HTML part the same name is
// text, never markup.
type Templates struct {
	byKey map[templateKey]*template.Template
	html  map[templateKey]*htmltemplate.Template
}

type templateKey struct {
	lang Language
	tone Tone
}

// ParseTemplates returns the embedded templates, refusing a set that lacks a language and
// tone or a file that does not define what it must (subject and body; html). They are parsed
// once per process (Templates is only read, by any number of goroutines): a process that
// builds its tools again (a test's server, a replica) parsed them every time, and html/template
// escaped each new copy again on its first use.
func ParseTemplates() (*Templates, error) { return parsedTemplates() }

var parsedTemplates = sync.OnceValues(parseTemplates)

func parseTemplates() (*Templates, error) {
	t := &Templates{byKey: map[templateKey]*template.Template{}, html: map[templateKey]*htmltemplate.Template{}}
	var errs []error
	for _, lang := range Languages() {
		for _, tone := range Tones() {
			key := templateKey{lang, tone}
			name := string(lang) + "." + string(tone) + ".tmpl"
			tpl, err := template.New(name).Option("missingkey=error").ParseFS(templateFiles, "templates/"+name)
			if err != nil {
				errs = append(errs, fmt.Errorf("reminders: template %s: %w", name, err))
			} else {
				for _, part := range []string{"subject", "body"} {
					if tpl.Lookup(part) == nil {
						errs = append(errs, fmt.Errorf("reminders: template %s does not define %q", name, part))
					}
				}
				t.byKey[key] = tpl
			}
			name = string(lang) + "." + string(tone) + ".html.tmpl"
			htpl, err := htmltemplate.New(name).Option("missingkey=error").ParseFS(templateFiles, "templates/"+name)
			if err != nil {
				errs = append(errs, fmt.Errorf("reminders: template %s: %w", name, err))
				continue
			}
			if htpl.Lookup("html") == nil {
				errs = append(errs, fmt.Errorf("reminders: template %s does not define %q", name, "html"))
			}
			t.html[key] = htpl
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// Message is what a reminder says: whom it addresses, which invoices it lists, in which
// currency, and how to pay them by PIX.
type Message struct {
	Name     string
	Currency string // ISO 4217 code of every amount; "" is BRL
	Invoices []Invoice
	// Pix, when not nil, is the PIX code (BR Code) that pays the reminder: its copia-e-cola
	// string is written in both parts, and the HTML shows it as the QR code the message
	// carries inline under QRContentID. PIX is BRL only.
	Pix *Pix
}

// Pix is the PIX code a reminder carries: the BR Code's copia-e-cola string, the txid it holds
// (TxIDFor the draft) and the amount it asks for (0: the payer types it).
type Pix struct {
	Code        string
	TxID        string
	AmountCents int64
}

// QRContentID is the Content-ID of a reminder's QR code (the image of Pix.Code), which its HTML
// shows as <img src="cid:pix-qr@cobranca">: the sender attaches the image under it, inline.
const QRContentID = "pix-qr@cobranca"

// MaxPixCode bounds a PIX code's length: a BR Code's fields are at most 99 characters each,
// and a static one has a dozen.
const MaxPixCode = 512

// Rendered is a reminder written out: its subject, its text/plain body, and the same message
// as an HTML document (which names the QR code by cid: when the message has a Pix).
type Rendered struct {
	Subject, Text, HTML string
}

// view is what a template reads: every value already written out as text for its language.
type view struct {
	Subject  string // the rendered subject: the HTML's title
	Name     string
	Count    int
	Total    string
	Invoices []invoiceView
	Pix      *pixView
}

type invoiceView struct {
	ID      string
	DueDate string
	Amount  string
	Boleto  string // the linha digitável as banks print it; "" when the invoice has none
}

type pixView struct {
	Amount string // "" when the code carries no amount
	Code   string
	TxID   string
	QRSrc  htmltemplate.URL // cid:QRContentID
}

// Render writes m in lang and tone: the subject, the text/plain body and the HTML. Invoices
// are listed by due date, then id; amounts in m's currency as value.FormatMoney writes them
// (R$ 1.234,56 for BRL, in both languages: the currency is the draft's, not the reader's);
// dates are dd/mm/yyyy in pt-BR and "Jan 2, 2006" in en; an invoice's boleto line is written
// as banks print it. It refuses a boleto line whose check digits do not verify, an unknown
// currency, and a Pix that is not BRL or not one line of printable ASCII.
func (t *Templates) Render(lang Language, tone Tone, m Message) (Rendered, error) {
	key := templateKey{lang, tone}
	tpl, htpl := t.byKey[key], t.html[key]
	if tpl == nil || htpl == nil {
		return Rendered{}, fmt.Errorf("reminders: no template for language %q and tone %q", lang, tone)
	}
	currency := m.Currency
	if currency == "" {
		currency = value.BaseCurrency
	}
	if value.CurrencyOf(currency) == nil {
		return Rendered{}, fmt.Errorf("reminders: currency %q is not an ISO 4217 code with a minor unit", m.Currency)
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
			return Rendered{}, err
		}
		iv := invoiceView{ID: inv.ID, DueDate: date, Amount: value.FormatMoney(inv.AmountCents, currency)}
		if inv.BoletoLine != "" {
			line, err := boleto.Parse(inv.BoletoLine)
			if err != nil {
				return Rendered{}, fmt.Errorf("reminders: invoice %s: boleto line: %w", inv.ID, err)
			}
			iv.Boleto = line.Formatted()
		}
		v.Invoices = append(v.Invoices, iv)
		total += inv.AmountCents
	}
	v.Total = value.FormatMoney(total, currency)
	if m.Pix != nil {
		if err := checkPix(*m.Pix, currency); err != nil {
			return Rendered{}, err
		}
		v.Pix = &pixView{Code: m.Pix.Code, TxID: m.Pix.TxID, QRSrc: htmltemplate.URL("cid:" + QRContentID)}
		if m.Pix.AmountCents > 0 {
			v.Pix.Amount = value.FormatMoney(m.Pix.AmountCents, currency)
		}
	}
	var sb, bb, hb strings.Builder
	if err := tpl.ExecuteTemplate(&sb, "subject", v); err != nil {
		return Rendered{}, fmt.Errorf("reminders: render subject: %w", err)
	}
	v.Subject = strings.TrimSpace(sb.String())
	if strings.ContainsAny(v.Subject, "\r\n") {
		return Rendered{}, fmt.Errorf("reminders: template %s: the subject spans lines", tpl.Name())
	}
	if err := tpl.ExecuteTemplate(&bb, "body", v); err != nil {
		return Rendered{}, fmt.Errorf("reminders: render body: %w", err)
	}
	if err := htpl.ExecuteTemplate(&hb, "html", v); err != nil {
		return Rendered{}, fmt.Errorf("reminders: render html: %w", err)
	}
	return Rendered{Subject: v.Subject, Text: strings.TrimSpace(bb.String()) + "\n", HTML: strings.TrimSpace(hb.String()) + "\n"}, nil
}

// checkPix refuses a Pix a message cannot carry: a code that is not one line of printable
// ASCII (a BR Code's alphabet) or is too long, a txid that is not 1–25 letters and digits,
// a negative amount, or a currency other than BRL (a PIX is in reais).
func checkPix(p Pix, currency string) error {
	switch {
	case currency != value.BaseCurrency:
		return fmt.Errorf("reminders: a PIX code pays reais (BRL), not %s", currency)
	case p.Code == "" || len(p.Code) > MaxPixCode || strings.IndexFunc(p.Code, func(r rune) bool { return r < 0x20 || r > 0x7e }) >= 0:
		return fmt.Errorf("reminders: the PIX code must be 1 to %d printable ASCII characters", MaxPixCode)
	case !validTxID(p.TxID):
		return errors.New("reminders: the PIX txid must be 1 to 25 letters and digits")
	case p.AmountCents < 0:
		return errors.New("reminders: the PIX amount must not be negative")
	}
	return nil
}

// validTxID reports whether s is a PIX txid: 1 to 25 of A-Z, a-z, 0-9.
func validTxID(s string) bool {
	if s == "" || len(s) > 25 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
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
