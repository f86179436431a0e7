package smtptest_test

import (
	"bytes"
	"errors"
	"net/smtp"
	"net/textproto"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/smtptest"
)

const raw = "From: <a@cobranca.test>\r\nTo: <ana@cliente.example>\r\nMessage-Id: <1.outbox@cobranca.test>\r\n" +
	"Subject: =?UTF-8?q?Lembrete=3A_fatura_n=C2=BA_42?=\r\nContent-Type: text/plain; charset=UTF-8\r\n" +
	"Content-Transfer-Encoding: quoted-printable\r\n\r\nOl=C3=A1 Ana,\r\na fatura vence amanh=C3=A3.\r\n"

// send delivers raw from a@cobranca.test to the recipients over plain SMTP.
func send(addr string, to ...string) error {
	return smtp.SendMail(addr, nil, "a@cobranca.test", to, []byte(raw))
}

// TestServer: messages are recorded with their envelope, raw bytes and decoded headers; queued
// refusals answer the next DATA commands, in order, with their codes, and record nothing; Wait
// returns once enough messages arrived and fails the test when they do not.
func TestServer(t *testing.T) {
	s := smtptest.New(t)
	if !strings.HasPrefix(s.URL(), "smtp://127.0.0.1:") || !strings.HasSuffix(s.URL(), "?starttls=off") {
		t.Errorf("URL() = %q", s.URL())
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = send(s.Addr(), "ana@cliente.example", "bia@cliente.example")
	}()
	got := s.Wait(t, 1, 10*time.Second)
	if len(got) != 1 {
		t.Fatalf("Wait = %d messages, want 1", len(got))
	}
	m := got[0]
	if m.From != "a@cobranca.test" || strings.Join(m.To, " ") != "ana@cliente.example bia@cliente.example" || m.TLS {
		t.Errorf("envelope = %q → %q (TLS %v), want a@cobranca.test → both recipients in plain text", m.From, m.To, m.TLS)
	}
	if string(m.Raw) != raw {
		t.Errorf("Raw = %q, want %q", m.Raw, raw)
	}
	if m.MessageID != "<1.outbox@cobranca.test>" || m.Subject != "Lembrete: fatura nº 42" || m.Body != "Olá Ana,\r\na fatura vence amanhã." {
		t.Errorf("read %q / %q / %q", m.MessageID, m.Subject, m.Body)
	}

	s.Refuse(smtptest.Transient, smtptest.Permanent)
	for _, want := range []int{451, 550} {
		err := send(s.Addr(), "carla@cliente.example")
		var perr *textproto.Error
		if !errors.As(err, &perr) || perr.Code != want || !strings.Contains(perr.Msg, "carla@cliente.example") {
			t.Errorf("send = %v, want a %d naming the recipient", err, want)
		}
	}
	if n := s.Refusing(); n != 0 {
		t.Errorf("Refusing() = %d after both were used", n)
	}
	if err := send(s.Addr(), "dani@cliente.example"); err != nil {
		t.Fatal(err)
	}
	if got := s.Messages(); len(got) != 2 || got[1].To[0] != "dani@cliente.example" {
		t.Errorf("Messages() = %+v, want the first and dani's, the refused ones not recorded", got)
	}

	// Wait fails the test when the messages do not come.
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); s.Wait(ft, 3, 100*time.Millisecond) }()
	<-done
	if !ft.failed {
		t.Error("Wait for a message that never came did not fail")
	}
}

// fakeT records a Fatalf instead of failing the real test.
type fakeT struct {
	testing.TB
	failed bool
}

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	runtime.Goexit()
}

// TestLatency: a server started with a latency answers each DATA no sooner than that.
func TestLatency(t *testing.T) {
	const latency = 150 * time.Millisecond
	for _, tc := range []struct {
		latency time.Duration
		slow    bool
	}{{0, false}, {latency, true}} {
		s := smtptest.Start(t, smtptest.Options{Latency: tc.latency})
		// Connected and greeted first: only DATA's answer is timed.
		c, err := smtp.Dial(s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Mail("a@cobranca.test"); err != nil {
			t.Fatal(err)
		}
		if err := c.Rcpt("ana@cliente.example"); err != nil {
			t.Fatal(err)
		}
		w, err := c.Data()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(raw)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		c.Close()
		if slow := took >= latency; slow != tc.slow {
			t.Errorf("latency %v: DATA answered in %v", tc.latency, took)
		}
		if got := s.Messages(); len(got) != 1 {
			t.Errorf("latency %v: %d messages recorded, want 1", tc.latency, len(got))
		}
	}
}

// A reminder's MIME tree: multipart/alternative holding the text and a multipart/related of
// the HTML and its inline image; each part decoded from its transfer encoding, the whole tree
// kept. A multipart without a boundary or an unknown transfer encoding is refused.
func TestParseMultipart(t *testing.T) {
	msg := "Message-Id: <2.outbox@cobranca.test>\r\nSubject: =?UTF-8?q?Lembrete_amig=C3=A1vel?=\r\nMIME-Version: 1.0\r\n" +
		"Content-Type: multipart/alternative; boundary=alt\r\n\r\n" +
		"--alt\r\nContent-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nOl=C3=A1, Ana\r\n" +
		"--alt\r\nContent-Type: multipart/related; boundary=rel\r\n\r\n" +
		"--rel\r\nContent-Type: text/html; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n<p>Ol=C3=A1</p><img src=3D\"cid:qr@x\">\r\n" +
		"--rel\r\nContent-Type: image/png\r\nContent-Id: <qr@x>\r\nContent-Transfer-Encoding: base64\r\n\r\niVBO\r\nRw==\r\n" +
		"--rel--\r\n--alt--\r\n"
	m, err := smtptest.Parse([]byte(msg))
	if err != nil {
		t.Fatal(err)
	}
	img := m.Inline["qr@x"]
	if m.Subject != "Lembrete amigável" || m.Body != "Olá, Ana" || m.HTML != `<p>Olá</p><img src="cid:qr@x">` ||
		img.ContentType != "image/png" || !bytes.Equal(img.Data, []byte{0x89, 'P', 'N', 'G'}) {
		t.Errorf("Parse = %q / %q / %q / %+v", m.Subject, m.Body, m.HTML, m.Inline)
	}
	if want := "multipart/alternative\n  text/plain\n  multipart/related\n    text/html\n    image/png\n"; m.Tree.Shape() != want {
		t.Errorf("Tree.Shape() = %q, want %q", m.Tree.Shape(), want)
	}
	rel := m.Tree.Parts[1]
	if png := rel.Parts[1]; png.ContentID != "<qr@x>" || !bytes.Equal(png.Body, img.Data) || m.Tree.Parts[0].Charset != "UTF-8" || rel.Body != nil {
		t.Errorf("Tree = %+v: want the image's Content-ID as written and its bytes, the text's charset, no body for a multipart", m.Tree)
	}
	if m.Header.Get("Mime-Version") != "1.0" {
		t.Errorf("Header = %v, want the message's fields", m.Header)
	}
	for _, bad := range []string{
		"Subject: x\r\nContent-Type: multipart/mixed\r\n\r\nbody",
		"Subject: x\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: x-uuencode\r\n\r\nbody",
	} {
		if _, err := smtptest.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) = nil error", bad)
		}
	}
}
