package reminders_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/reminders"
)

// BACEN's own example BR Code (Manual de Padrões para Iniciação do Pix): a real copia-e-cola
// string, to render; internal/pix writes the codes.
const bacenCode = "00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D"

// Two boleto lines whose check digits verify: one as digits, one as banks print it.
const (
	boletoItau     = "34191090080012345678290123456783311040000150000"
	boletoItauLine = "34191.09008 00123.456782 90123.456783 3 11040000150000"
	boletoBrad     = "23793.38128 60007.827136 61793.000003 1 11350000002599"
)

// pixMessage is a reminder with every part: two invoices with a boleto, one without, and the
// PIX code of their total.
func pixMessage(name string) reminders.Message {
	return reminders.Message{Name: name, Invoices: []reminders.Invoice{
		{ID: "NF-2026-0042", DueDate: "2026-06-05", AmountCents: 150000, BoletoLine: boletoItau},
		{ID: "NF-2026-0007", DueDate: "2026-04-30", AmountCents: 2599, BoletoLine: boletoBrad},
		{ID: "NF-2026-0100", DueDate: "2026-06-05", AmountCents: 99900},
	}, Pix: &reminders.Pix{Code: bacenCode, TxID: reminders.TxIDFor("d_" + strings.Repeat("q", 26)), AmountCents: 252499}}
}

// TestRenderPixGolden: the four renderings (language × tone) of a reminder with a PIX code and
// boleto lines, text and HTML, byte for byte. Regenerate with
// go test ./internal/reminders -run TestRenderPixGolden -update, and read the diff (the HTML
// files open in a browser; the QR code is then a broken image: it travels in the message).
func TestRenderPixGolden(t *testing.T) {
	tpl := templates(t)
	for _, lang := range reminders.Languages() {
		for _, tone := range reminders.Tones() {
			name := string(lang) + "." + string(tone)
			t.Run(name, func(t *testing.T) {
				r, err := tpl.Render(lang, tone, pixMessage("Padaria Pão Quente Ltda."))
				if err != nil {
					t.Fatal(err)
				}
				for file, got := range map[string]string{name + ".pix.golden": "Subject: " + r.Subject + "\n\n" + r.Text, name + ".html.golden": r.HTML} {
					path := filepath.Join("testdata", file)
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
						t.Errorf("Render(%s, %s), %s (-want +got):\n%s", lang, tone, file, diff)
					}
				}
			})
		}
	}
}

// TestRenderPix: with a PIX code, both parts say how much, how to pay (the bank's app, PIX, "Pix
// Copia e Cola" or the QR code) and give the code whole — in the text on a line of its own —
// and the HTML shows the QR code the message carries; each boleto line is printed as banks
// print it, under its invoice. Without a PIX code or boleto lines nothing of them is written.
func TestRenderPix(t *testing.T) {
	tpl := templates(t)
	m := pixMessage("Ana")
	for _, lang := range reminders.Languages() {
		for _, tone := range reminders.Tones() {
			r, err := tpl.Render(lang, tone, m)
			if err != nil {
				t.Fatal(err)
			}
			what := fmt.Sprintf("Render(%s, %s)", lang, tone)
			lines := strings.Split(r.Text, "\n")
			if !slices.Contains(lines, bacenCode) {
				t.Errorf("%s: the text has no line that is the copia-e-cola string alone:\n%s", what, r.Text)
			}
			for _, part := range []struct{ name, s string }{{"text", r.Text}, {"html", htmlText(t, r.HTML)}} {
				for _, want := range []string{"PIX", "Pix Copia e Cola", "QR code", "R$\u00a02.524,99", m.Pix.TxID, bacenCode, boletoItauLine, boletoBrad} {
					if !strings.Contains(part.s, want) {
						t.Errorf("%s: the %s part does not say %q:\n%s", what, part.name, want, part.s)
					}
				}
				bank := map[reminders.Language]string{reminders.PortugueseBR: "app do seu banco", reminders.English: "bank's app"}[lang]
				if !strings.Contains(part.s, bank) {
					t.Errorf("%s: the %s part does not say to open the %q", what, part.name, bank)
				}
			}
			// The boleto line follows its invoice in the text.
			for _, pair := range [][2]string{{"NF-2026-0042", boletoItauLine}, {"NF-2026-0007", boletoBrad}} {
				i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, pair[0]) })
				if i < 0 || i+1 >= len(lines) || !strings.HasSuffix(lines[i+1], pair[1]) {
					t.Errorf("%s: the line after invoice %s is not its boleto line %s:\n%s", what, pair[0], pair[1], r.Text)
				}
			}
			img := `<img src="cid:` + reminders.QRContentID + `" alt="`
			if strings.Count(r.HTML, "<img ") != 1 || !strings.Contains(r.HTML, img) || !strings.Contains(r.HTML, `width="200" height="200"`) {
				t.Errorf("%s: the HTML does not show the QR code once as %s… with its size", what, img)
			}

			// Without them, nothing of them.
			plain := m
			plain.Pix = nil
			plain.Invoices = []reminders.Invoice{{ID: "NF-1", DueDate: "2026-06-05", AmountCents: 100}}
			r, err = tpl.Render(lang, tone, plain)
			if err != nil {
				t.Fatal(err)
			}
			for _, part := range []string{r.Text, r.HTML} {
				for _, absent := range []string{"PIX", "Pix", "QR", "cid:", "Boleto", "<img"} {
					if strings.Contains(part, absent) {
						t.Errorf("%s without a PIX code nor a boleto: the message says %q", what, absent)
					}
				}
			}

			// A code without an amount (the payer types it): the PIX block names none.
			open := m
			open.Pix = &reminders.Pix{Code: bacenCode, TxID: "ABC123"}
			r, err = tpl.Render(lang, tone, open)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(r.Text, bacenCode) || strings.Count(r.Text, "R$\u00a02.524,99") != 1 {
				t.Errorf("%s of a code without an amount: the total appears %d times, want once (not in the PIX block):\n%s",
					what, strings.Count(r.Text, "R$\u00a02.524,99"), r.Text)
			}
		}
	}
}

// TestRenderCurrency: a reminder in another currency writes its amounts in it, in both parts.
func TestRenderCurrency(t *testing.T) {
	tpl := templates(t)
	m := reminders.Message{Name: "Helena Importadora", Currency: "USD", Invoices: []reminders.Invoice{{ID: "INV-7", DueDate: "2026-10-20", AmountCents: 123456}}}
	for _, lang := range reminders.Languages() {
		r, err := tpl.Render(lang, reminders.Firm, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range []string{r.Subject, r.Text, htmlText(t, r.HTML)} {
			if !strings.Contains(part, "US$\u00a01.234,56") || strings.Contains(part, "R$") {
				t.Errorf("Render(%s) in USD: %q, want US$\u00a01.234,56 and no R$", lang, part)
			}
		}
	}
}

// TestRenderRefuses: what a message cannot say is refused, saying what.
func TestRenderRefuses(t *testing.T) {
	tpl := templates(t)
	inv := reminders.Invoice{ID: "NF-9", DueDate: "2026-06-05", AmountCents: 100}
	pix := &reminders.Pix{Code: bacenCode, TxID: "ABC", AmountCents: 100}
	for _, tc := range []struct {
		name string
		m    reminders.Message
		want string
	}{
		{"a boleto line that does not verify", reminders.Message{Invoices: []reminders.Invoice{{ID: "NF-9", DueDate: "2026-06-05", AmountCents: 100,
			BoletoLine: "34191090080012345678290123456783311040000150001"}}}, "invoice NF-9: boleto line: the general check digit"},
		{"a boleto line too short", reminders.Message{Invoices: []reminders.Invoice{{ID: "NF-9", DueDate: "2026-06-05", AmountCents: 100,
			BoletoLine: "3419109008"}}}, "invoice NF-9: boleto line: a linha digitável of a boleto has 47 digits"},
		{"an unknown currency", reminders.Message{Currency: "XYZ", Invoices: []reminders.Invoice{inv}}, `currency "XYZ"`},
		{"a lower-case currency", reminders.Message{Currency: "brl", Invoices: []reminders.Invoice{inv}}, `currency "brl"`},
		{"a PIX code in dollars", reminders.Message{Currency: "USD", Invoices: []reminders.Invoice{inv}, Pix: pix}, "a PIX code pays reais (BRL), not USD"},
		{"a PIX code on two lines", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: bacenCode + "\n", TxID: "ABC"}}, "PIX code must be"},
		{"an empty PIX code", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{TxID: "ABC"}}, "PIX code must be"},
		{"a PIX code not ASCII", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: "São Paulo", TxID: "ABC"}}, "PIX code must be"},
		{"a PIX code too long", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: strings.Repeat("0", reminders.MaxPixCode+1), TxID: "ABC"}}, "PIX code must be"},
		{"a txid too long", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: bacenCode, TxID: strings.Repeat("A", 26)}}, "txid must be"},
		{"a txid with a dash", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: bacenCode, TxID: "A-1"}}, "txid must be"},
		{"no txid", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: bacenCode}}, "txid must be"},
		{"a negative amount", reminders.Message{Invoices: []reminders.Invoice{inv}, Pix: &reminders.Pix{Code: bacenCode, TxID: "A", AmountCents: -1}}, "amount must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tpl.Render(reminders.PortugueseBR, reminders.Friendly, tc.m)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Render = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// TestTxIDFor: a draft's txid is at most 25 letters and digits (BACEN's rule for a txid),
// upper case, derived from the id alone, and distinct drafts get distinct txids.
func TestTxIDFor(t *testing.T) {
	seen := map[string]string{}
	for range 20000 {
		id := ident.New(reminders.IDPrefix)
		got := reminders.TxIDFor(id)
		if len(got) != 25 || strings.Trim(got, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != "" {
			t.Fatalf("TxIDFor(%s) = %q, want 25 of A-Z 2-7", id, got)
		}
		if got != strings.ToUpper(id[2:27]) || reminders.TxIDFor(id) != got {
			t.Fatalf("TxIDFor(%s) = %q, want the id's first 25 characters after d_, upper-cased, every time", id, got)
		}
		if other, dup := seen[got]; dup {
			t.Fatalf("TxIDFor(%s) = TxIDFor(%s) = %s", id, other, got)
		}
		seen[got] = id
	}
	for in, want := range map[string]string{
		"":                      "",
		"d_":                    "",
		"d_abc-def":             "ABCDEF",
		"x_" + "ab" + "!!":      "XAB",
		strings.Repeat("a", 40): strings.Repeat("A", 25),
	} {
		if got := reminders.TxIDFor(in); got != want {
			t.Errorf("TxIDFor(%q) = %q, want %q", in, got, want)
		}
	}
}

// hostile is customer text that tries to be markup, script, a remote load or a template.
var hostile = []string{
	`<img src=x onerror=alert(1)>`,
	`<img src=x onerror="document.title='pwned'">`,
	`<script>alert("x")</script>`,
	`"><svg onload=alert(1)>`,
	`' onmouseover='alert(1)`,
	`</td></tr></table><a href="https://evil.example/">pay here</a>`,
	`<link rel=stylesheet href=//evil.example/x.css>`,
	`<style>body{background:url(https://evil.example/t.png)}</style>`,
	`javascript:alert(1)`,
	`https://evil.example/track.png`,
	`{{.Name}} {{template "html" .}}`,
	`<!-- x --> <![CDATA[ y ]]> &amp; &lt;b&gt;`,
	`<base href="https://evil.example/">`,
	`<meta http-equiv="refresh" content="0;url=https://evil.example/">`,
	"Ana\u2028Souza\x00",
}

// TestRenderHTMLIsSafe: for every language, tone, hostile name and invoice id, with and without
// a PIX code and boleto lines, the HTML part loads nothing (no http(s) or protocol-relative URL
// in any attribute, no url() in a style, the only image the cid: QR code), runs nothing (no
// script element, no on* attribute, no javascript: URL) and links nowhere.
func TestRenderHTMLIsSafe(t *testing.T) {
	tpl := templates(t)
	runs := 0
	for _, lang := range reminders.Languages() {
		for _, tone := range reminders.Tones() {
			for _, text := range append([]string{"Ana"}, hostile...) {
				for _, withPix := range []bool{false, true} {
					m := pixMessage(text)
					m.Invoices[2].ID = text
					if !withPix {
						m.Pix = nil
						for i := range m.Invoices {
							m.Invoices[i].BoletoLine = ""
						}
					}
					r, err := tpl.Render(lang, tone, m)
					if err != nil {
						t.Fatal(err)
					}
					for _, problem := range unsafeHTML(t, r.HTML, withPix) {
						t.Errorf("Render(%s, %s) with %q (pix %v): %s", lang, tone, text, withPix, problem)
					}
					runs++
				}
			}
		}
	}
	if runs != 2*2*(len(hostile)+1)*2 {
		t.Fatalf("checked %d renderings", runs)
	}
}

// FuzzRenderHTML: whatever the customer's name and invoice id, the HTML stays inert and shows
// them as text.
func FuzzRenderHTML(f *testing.F) {
	for _, h := range hostile {
		f.Add(h, "NF-1")
	}
	tpl := templates(f)
	f.Fuzz(func(t *testing.T, name, id string) {
		m := pixMessage(name)
		m.Invoices[2].ID = id
		r, err := tpl.Render(reminders.English, reminders.Firm, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, problem := range unsafeHTML(t, r.HTML, true) {
			t.Errorf("name %q, id %q: %s", name, id, problem)
		}
	})
}

// TestRenderHTMLCustomerTextIsData: customer text that looks like markup, a template action or
// an entity is text in the HTML: the document has the same elements and attributes as the
// rendering of a plain placeholder, and its text is that rendering's with the placeholder
// replaced by the customer's text, exactly as given.
func TestRenderHTMLCustomerTextIsData(t *testing.T) {
	tpl := templates(t)
	const placeholder = "PLACEHOLDER"
	message := func(s string) reminders.Message {
		m := pixMessage(s)
		m.Invoices[2].ID = s
		m.Invoices[2].DueDate = "2026-07-01" // the last whatever its id
		return m
	}
	for _, text := range hostile {
		if strings.ContainsRune(text, 0) {
			continue // html/template writes NUL as U+FFFD, as a browser reads it: not the text as given
		}
		for _, lang := range reminders.Languages() {
			for _, tone := range reminders.Tones() {
				want, err := tpl.Render(lang, tone, message(placeholder))
				if err != nil {
					t.Fatal(err)
				}
				got, err := tpl.Render(lang, tone, message(text))
				if err != nil {
					t.Fatal(err)
				}
				wantTokens := tokens(t, want.HTML)
				if n := strings.Count(strings.Join(wantTokens, ""), placeholder); n != 2 {
					t.Fatalf("Render(%s, %s): the HTML's text holds the name and the invoice id %d times, want 2", lang, tone, n)
				}
				for i := range wantTokens {
					if strings.HasPrefix(wantTokens[i], "text:") {
						wantTokens[i] = strings.ReplaceAll(wantTokens[i], placeholder, text)
					}
				}
				if diff := cmp.Diff(wantTokens, tokens(t, got.HTML)); diff != "" {
					t.Errorf("Render(%s, %s) of %q: the HTML differs from the placeholder's with the text put in (-want +got):\n%s", lang, tone, text, diff)
				}
			}
		}
	}
}

// tokens is an HTML document as a browser's tokenizer reads it: a start or end tag with its
// attributes, or a run of text (unescaped), one a string; the text between two tags is one.
func tokens(t *testing.T, doc string) []string {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(doc))
	var out []string
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			return mergeText(out)
		case html.TextToken:
			out = append(out, "text:"+string(z.Text()))
		default:
			tok := z.Token()
			s := tt.String() + ":" + tok.Data
			for _, a := range tok.Attr {
				s += " " + a.Key + "=" + a.Val
			}
			out = append(out, s)
		}
	}
}

func mergeText(ts []string) []string {
	var out []string
	for _, s := range ts {
		if n := len(out); n > 0 && strings.HasPrefix(s, "text:") && strings.HasPrefix(out[n-1], "text:") {
			out[n-1] += strings.TrimPrefix(s, "text:")
			continue
		}
		out = append(out, s)
	}
	return out
}

// htmlText is the text of an HTML document, as a reader sees it (tags dropped, entities read).
func htmlText(t *testing.T, doc string) string {
	t.Helper()
	var b strings.Builder
	for _, s := range tokens(t, doc) {
		if text, ok := strings.CutPrefix(s, "text:"); ok {
			b.WriteString(text)
		}
	}
	return b.String()
}

// unsafeHTML lists what in doc would run, load or link: it reads it with an HTML5 tokenizer, as
// a mail client's renderer does. The one image allowed is the QR code, by cid:, when withPix.
func unsafeHTML(t *testing.T, doc string, withPix bool) []string {
	t.Helper()
	var problems []string
	if strings.Contains(strings.ToLower(doc), "<script") {
		problems = append(problems, "a <script")
	}
	images := 0
	z := html.NewTokenizer(strings.NewReader(doc))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			break
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken {
			continue
		}
		tok := z.Token()
		switch tok.Data {
		case "script", "style", "link", "iframe", "frame", "object", "embed", "form", "base", "svg", "math", "video", "audio", "source", "a", "input", "button":
			problems = append(problems, "a <"+tok.Data+"> element")
		case "meta":
			for _, a := range tok.Attr {
				if a.Key == "http-equiv" {
					problems = append(problems, "a <meta http-equiv>")
				}
			}
		case "img":
			images++
		}
		for _, a := range tok.Attr {
			v := strings.ToLower(strings.TrimSpace(a.Val))
			switch {
			case strings.HasPrefix(a.Key, "on"):
				problems = append(problems, fmt.Sprintf("<%s %s=…>: an event handler", tok.Data, a.Key))
			case a.Key == "href" || a.Key == "action" || a.Key == "formaction" || a.Key == "background" || a.Key == "srcset" || a.Key == "poster":
				problems = append(problems, fmt.Sprintf("<%s %s=%q>: a link or a load", tok.Data, a.Key, a.Val))
			case a.Key == "src" && !(tok.Data == "img" && a.Val == "cid:"+reminders.QRContentID && withPix):
				problems = append(problems, fmt.Sprintf("<%s src=%q>: a load", tok.Data, a.Val))
			case strings.Contains(v, "http:") || strings.Contains(v, "https:") || strings.Contains(v, "//") || strings.Contains(v, "javascript:"):
				problems = append(problems, fmt.Sprintf("<%s %s=%q>: a URL", tok.Data, a.Key, a.Val))
			case a.Key == "style" && (strings.Contains(v, "url(") || strings.Contains(v, "expression") || strings.Contains(v, "@import")):
				problems = append(problems, fmt.Sprintf("<%s style=%q>: a load from CSS", tok.Data, a.Val))
			}
		}
	}
	if want := map[bool]int{true: 1, false: 0}[withPix]; images != want {
		problems = append(problems, fmt.Sprintf("%d images, want %d", images, want))
	}
	return problems
}

// BenchmarkRender: what writing one reminder costs, text alone (a message without a PIX code
// or boleto lines still renders its HTML too) and with every part.
func BenchmarkRender(b *testing.B) {
	tpl := templates(b)
	plain := pixMessage("Padaria Pão Quente Ltda.")
	plain.Pix = nil
	for i := range plain.Invoices {
		plain.Invoices[i].BoletoLine = ""
	}
	for name, m := range map[string]reminders.Message{"plain": plain, "pix+boleto": pixMessage("Padaria Pão Quente Ltda.")} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := tpl.Render(reminders.PortugueseBR, reminders.Friendly, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
