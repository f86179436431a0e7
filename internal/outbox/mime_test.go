package outbox_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	gomail "github.com/wneessen/go-mail"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pix"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// readMessage parses an RFC 5322 message and its MIME tree with the standard library only, as
// a receiver that knows nothing of go-mail (smtptest.Parse), and checks its MIME-Version.
func readMessage(t *testing.T, raw []byte) smtptest.Message {
	t.Helper()
	m, err := smtptest.Parse(raw)
	if err != nil {
		t.Fatalf("reading the message: %v\n%s", err, raw)
	}
	if v := m.Header.Get("Mime-Version"); v != "1.0" {
		t.Errorf("MIME-Version = %q, want 1.0", v)
	}
	return m
}

// text is a text part's body as the sender wrote it: quoted-printable carries line ends as CRLF.
func text(b []byte) string { return strings.ReplaceAll(string(b), "\r\n", "\n") }

// qrPNG is a reminder's QR code, as internal/pix draws it (BACEN's example BR Code).
func qrPNG(t testing.TB) []byte {
	t.Helper()
	b, err := pix.QRPNG("00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// htmlMessage is a reminder as the outbox gets it: text, HTML, and the QR code the HTML shows.
func htmlMessage(t testing.TB) outbox.Message {
	return outbox.Message{
		To: "ana@cliente.example", Subject: "Lembrete: fatura 42, R$\u00a01.234,56",
		Text: "Olá Ana,\na fatura vence amanhã.\n\nPIX copia e cola:\n00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-4266554400005204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D\n",
		HTML: "<!DOCTYPE html>\n<html lang=\"pt-BR\"><body><p>Olá Ana, a fatura vence amanhã.</p>" +
			"<img src=\"cid:pix-qr@cobranca\" alt=\"QR code PIX\" width=\"200\" height=\"200\"><p>" + strings.Repeat("ção ", 40) + "</p></body></html>\n",
		Related: []outbox.Part{{ContentID: "pix-qr@cobranca", ContentType: "image/png", Name: "pix-qr.png", Data: qrPNG(t)}},
		Ref:     "d_draft1",
	}
}

// checkHTMLMessage checks the tree a message of htmlMessage's is sent as: multipart/related
// whose root is multipart/alternative (the text, then the HTML), and the image inline with
// its Content-ID, every body the bytes given.
func checkHTMLMessage(t *testing.T, want outbox.Message, root smtptest.Part) {
	t.Helper()
	const wantShape = "multipart/related\n  multipart/alternative\n    text/plain\n    text/html\n  image/png\n"
	if got := root.Shape(); got != wantShape {
		t.Fatalf("MIME tree:\n%s\nwant:\n%s", got, wantShape)
	}
	alt, img := root.Parts[0], root.Parts[1]
	plain, html := alt.Parts[0], alt.Parts[1]
	for _, p := range []smtptest.Part{plain, html} {
		if !strings.EqualFold(p.Charset, "utf-8") {
			t.Errorf("%s charset = %q, want UTF-8", p.Type, p.Charset)
		}
	}
	if got := text(plain.Body); got != want.Text {
		t.Errorf("text/plain body (-want +got):\n%s", cmp.Diff(want.Text, got))
	}
	if got := text(html.Body); got != want.HTML {
		t.Errorf("text/html body (-want +got):\n%s", cmp.Diff(want.HTML, got))
	}
	if img.ContentID != "<"+want.Related[0].ContentID+">" {
		t.Errorf("the image's Content-ID = %q, want <%s>", img.ContentID, want.Related[0].ContentID)
	}
	if img.Disposition != "inline" {
		t.Errorf("the image's Content-Disposition = %q, want inline", img.Disposition)
	}
	if !bytes.Equal(img.Body, want.Related[0].Data) {
		t.Errorf("the image's bytes differ from the part's (%d bytes, want %d)", len(img.Body), len(want.Related[0].Data))
	}
	if _, err := png.Decode(bytes.NewReader(img.Body)); err != nil {
		t.Errorf("the image is not a PNG: %v", err)
	}
	if !strings.Contains(string(html.Body), `src="cid:`+want.Related[0].ContentID+`"`) {
		t.Errorf("the HTML does not name the image by its Content-ID")
	}
}

// TestComposeHTML: a message with HTML and an inline image is written as multipart/related
// around multipart/alternative (text/plain first, text/html last) with the image inline, and
// a reader using only the standard library gets back both bodies, the Content-ID and the
// image's bytes.
func TestComposeHTML(t *testing.T) {
	want := htmlMessage(t)
	m, err := outbox.Compose("cobranca@cobranca.test", 7, outbox.Args{Message: want, Token: "tok"}, time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(b.String(), "\r\n") {
		if len(line) > 998 {
			t.Errorf("line %d is %d bytes long, more than RFC 5322 allows", i+1, len(line))
		}
	}
	got := readMessage(t, b.Bytes())
	if got.Subject != want.Subject { // decoded from RFC 2047
		t.Errorf("Subject = %q, want %q", got.Subject, want.Subject)
	}
	if got.MessageID != "<7.tok.outbox@cobranca.test>" {
		t.Errorf("Message-ID = %q", got.MessageID)
	}
	checkHTMLMessage(t, want, got.Tree)

	// HTML without images: multipart/alternative alone.
	noImage := want
	noImage.Related = nil
	c, err := outbox.Compose("cobranca@cobranca.test", 8, outbox.Args{Message: noImage}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if _, err := c.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	root := readMessage(t, b.Bytes()).Tree
	if got, want := root.Shape(), "multipart/alternative\n  text/plain\n  text/html\n"; got != want {
		t.Errorf("HTML without images: MIME tree:\n%s\nwant:\n%s", got, want)
	}
}

// composeBefore is Compose as it was before messages had HTML: the oracle of a text-only
// message, which must be sent exactly as then.
func composeBefore(from string, id outbox.ID, a outbox.Args, created time.Time) (*gomail.Msg, error) {
	m := gomail.NewMsg()
	if err := m.From(from); err != nil {
		return nil, err
	}
	if err := m.To(a.To); err != nil {
		return nil, err
	}
	m.Subject(a.Subject)
	m.SetMessageIDWithValue(outbox.MessageID(id, a.Token, from[strings.LastIndexByte(from, '@')+1:]))
	m.SetDateWithValue(created)
	m.SetBodyString(gomail.TypeTextPlain, a.Text)
	return m, nil
}

// TestComposeTextOnlyAsBefore: a message without HTML is the single text/plain part it was
// before HTML existed, byte for byte, and its stored arguments are the same JSON (an entry
// enqueued before this version is sent as it was).
func TestComposeTextOnlyAsBefore(t *testing.T) {
	a := outbox.Args{Message: msg, Token: "abc"}
	at := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	write := func(m *gomail.Msg, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if _, err := m.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	got, want := write(outbox.Compose("cobranca@cobranca.test", 3, a, at)), write(composeBefore("cobranca@cobranca.test", 3, a, at))
	if got != want {
		t.Errorf("a text-only message differs from before (-before +now):\n%s", cmp.Diff(want, got))
	}
	root := readMessage(t, []byte(got)).Tree
	if root.Shape() != "text/plain\n" || text(root.Body) != msg.Text {
		t.Errorf("a text-only message is %s with %q, want text/plain with %q", root.Shape(), root.Body, msg.Text)
	}
	js, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"To":"ana@cliente.example","Subject":"Lembrete: fatura 42","Text":"Olá Ana, a fatura vence amanhã.","Ref":"d_draft1","token":"abc"}`; string(js) != want {
		t.Errorf("a text-only entry's arguments = %s, want %s", js, want)
	}
	var back outbox.Args
	h := outbox.Args{Message: htmlMessage(t)}
	js, err = json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &back); err != nil || !cmp.Equal(back, h) {
		t.Errorf("an HTML entry's arguments do not read back: %v (-want +got):\n%s", err, cmp.Diff(h, back))
	}
}

// TestDirHTML: the Dir sender writes the HTML message as a .eml a mail client opens: the same
// tree, bodies and image, read back with the standard library.
func TestDirHTML(t *testing.T) {
	db := storetest.SQLite(t)
	dir := filepath.Join(t.TempDir(), "outbox")
	o := start(t, db, outbox.Dir{Path: dir}, nil)
	want := htmlMessage(t)
	id, err := enqueue(t, db, o, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, strings.Trim(id.MessageID, "<>")+".eml")
	waitFor(t, file, func() bool { _, err := os.Stat(file); return err == nil })
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	m := readMessage(t, raw)
	if m.MessageID != id.MessageID {
		t.Errorf("Message-ID = %q, want %q", m.MessageID, id.MessageID)
	}
	checkHTMLMessage(t, want, m.Tree)
}

// TestValidateHTML: the HTML and its inline parts are checked before a message is queued, each
// refusal naming the field.
func TestValidateHTML(t *testing.T) {
	good := htmlMessage(t)
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(a good HTML message) = %v", err)
	}
	part := good.Related[0]
	with := func(f func(m *outbox.Message)) outbox.Message {
		m := good
		m.Related = slices.Clone(good.Related)
		f(&m)
		return m
	}
	withPart := func(f func(p *outbox.Part)) outbox.Message {
		return with(func(m *outbox.Message) { f(&m.Related[0]) })
	}
	for _, tc := range []struct {
		name  string
		m     outbox.Message
		field string
	}{
		{"html too long", with(func(m *outbox.Message) { m.HTML = strings.Repeat("a", outbox.MaxText+1) }), "html"},
		{"parts without html", with(func(m *outbox.Message) { m.HTML = "" }), "related"},
		{"five parts", with(func(m *outbox.Message) {
			m.Related = nil
			for i := range 5 {
				p := part
				p.ContentID = fmt.Sprintf("p%d@cobranca", i)
				m.HTML += "cid:" + p.ContentID
				m.Related = append(m.Related, p)
			}
		}), "related"},
		{"no content id", withPart(func(p *outbox.Part) { p.ContentID = "" }), "related[0].contentId"},
		{"content id without @", withPart(func(p *outbox.Part) { p.ContentID = "pix-qr" }), "related[0].contentId"},
		{"content id with brackets", withPart(func(p *outbox.Part) { p.ContentID = "<pix-qr@cobranca>" }), "related[0].contentId"},
		{"content id with a space", withPart(func(p *outbox.Part) { p.ContentID = "pix qr@cobranca" }), "related[0].contentId"},
		{"content id with a line break", withPart(func(p *outbox.Part) { p.ContentID = "pix@cobranca\r\nBcc: x@y.example" }), "related[0].contentId"},
		{"content id with two dots", withPart(func(p *outbox.Part) { p.ContentID = "pix..qr@cobranca" }), "related[0].contentId"},
		{"content id too long", withPart(func(p *outbox.Part) { p.ContentID = strings.Repeat("a", 200) + "@cobranca" }), "related[0].contentId"},
		{"content id the HTML does not name", withPart(func(p *outbox.Part) { p.ContentID = "other@cobranca" }), "related[0].contentId"},
		{"two parts, one content id", with(func(m *outbox.Message) { m.Related = append(m.Related, part) }), "related[1].contentId"},
		{"svg", withPart(func(p *outbox.Part) { p.ContentType = "image/svg+xml" }), "related[0].contentType"},
		{"html part", withPart(func(p *outbox.Part) { p.ContentType = "text/html" }), "related[0].contentType"},
		{"no name", withPart(func(p *outbox.Part) { p.Name = "" }), "related[0].name"},
		{"name with a quote", withPart(func(p *outbox.Part) { p.Name = `qr".png` }), "related[0].name"},
		{"name with a slash", withPart(func(p *outbox.Part) { p.Name = "../qr.png" }), "related[0].name"},
		{"hidden name", withPart(func(p *outbox.Part) { p.Name = ".qr.png" }), "related[0].name"},
		{"no data", withPart(func(p *outbox.Part) { p.Data = nil }), "related[0].data"},
		{"data too large", withPart(func(p *outbox.Part) { p.Data = make([]byte, outbox.MaxPart+1) }), "related[0].data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), "invalid_arguments: "+tc.field+": ") {
				t.Fatalf("Validate = %v, want invalid_arguments naming %s", err, tc.field)
			}
		})
	}
	// The limits themselves pass.
	edge := with(func(m *outbox.Message) {
		m.HTML += strings.Repeat(" ", outbox.MaxText-len(m.HTML))
		m.Related[0].Data = make([]byte, outbox.MaxPart)
		m.Related[0].ContentType = "image/gif"
	})
	if err := edge.Validate(); err != nil {
		t.Errorf("Validate(at the limits) = %v", err)
	}
}

// FuzzCompose: whatever message Validate accepts, Compose writes one that the standard library
// reads back with the same text, HTML and image, in the same tree.
func FuzzCompose(f *testing.F) {
	m := htmlMessage(f)
	f.Add(m.Subject, m.Text, m.HTML, "pix-qr@cobranca", "pix-qr.png", m.Related[0].Data)
	f.Add("s", "", "<p>x</p>", "", "", []byte(nil))
	f.Add("Olá =?UTF-8?q?x?=", "a\r\n.\r\nb\n--boundary--\n", "cid:a@b =\n", "a@b", "a", []byte{0})
	f.Fuzz(func(t *testing.T, subject, txt, html, cid, name string, data []byte) {
		m := outbox.Message{To: "ana@cliente.example", Subject: subject, Text: txt, HTML: html, Ref: "d_1"}
		if cid != "" {
			m.Related = []outbox.Part{{ContentID: cid, ContentType: "image/png", Name: name, Data: data}}
		}
		if m.Validate() != nil {
			return
		}
		c, err := outbox.Compose("cobranca@cobranca.test", 1, outbox.Args{Message: m}, time.Unix(0, 0))
		if err != nil {
			t.Fatalf("Compose of a valid message: %v", err)
		}
		var b bytes.Buffer
		if _, err := c.WriteTo(&b); err != nil {
			t.Fatal(err)
		}
		root := readMessage(t, b.Bytes()).Tree
		// Quoted-printable and go-mail carry a line end as CRLF: compare bodies with line ends
		// made one.
		norm := func(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n") }
		var plain, htm smtptest.Part
		switch {
		case m.HTML == "":
			plain = root
		case len(m.Related) == 0:
			if root.Shape() != "multipart/alternative\n  text/plain\n  text/html\n" {
				t.Fatalf("tree %s", root.Shape())
			}
			plain, htm = root.Parts[0], root.Parts[1]
		default:
			if root.Shape() != "multipart/related\n  multipart/alternative\n    text/plain\n    text/html\n  image/png\n" {
				t.Fatalf("tree %s", root.Shape())
			}
			plain, htm = root.Parts[0].Parts[0], root.Parts[0].Parts[1]
			if img := root.Parts[1]; !bytes.Equal(img.Body, data) || img.ContentID != "<"+cid+">" {
				t.Errorf("the image reads back as %q <%s>, want %q <%s>", img.Body, img.ContentID, data, cid)
			}
		}
		if norm(string(plain.Body)) != norm(txt) {
			t.Errorf("text reads back as %q, want %q", plain.Body, txt)
		}
		if m.HTML != "" && norm(string(htm.Body)) != norm(html) {
			t.Errorf("HTML reads back as %q, want %q", htm.Body, html)
		}
	})
}
