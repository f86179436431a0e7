package notify_test

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/notify"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var created = time.Date(2026, 12, 2, 12, 3, 59, 0, time.FixedZone("BRT", -3*3600))

// TestNotice: what an approval's e-mail and chat message say, word for word, in each language;
// a requester's ids, which are the identity provider's, are quoted without markup, line breaks
// or length.
func TestNotice(t *testing.T) {
	nt := notify.Notice{Approval: "a_abc", Tool: "collections.send_reminder", Created: created, Expires: created.Add(15 * time.Minute),
		Requester: approval.Requester{Subject: "alice@financeiro.test", Actor: "agent-7", Client: "claude-desktop"}, Waiting: 3,
		Link: "https://cobranca.test/approvals/a_abc"}
	for _, tc := range []struct {
		lang                       notify.Language
		subject, text, chat        string
		client, oneWaits, lastLine string // what the hostile requester's messages say
	}{
		{
			lang:    notify.English,
			subject: "[cobranca] Approval a_abc waits: collections.send_reminder",
			text: `A call waits for a person's approval.

Approval: a_abc
Tool: collections.send_reminder
Asked by: alice@financeiro.test (agent agent-7, client claude-desktop)
Asked at: 2026-12-02 15:03 UTC
Expires: 2026-12-02 15:18 UTC
Now: 3 approvals wait for a decision

Approve or reject: https://cobranca.test/approvals/a_abc
`,
			chat:   "Approval a_abc waits: collections.send_reminder, asked by alice@financeiro.test (agent agent-7, client claude-desktop) at 2026-12-02 15:03 UTC, expires 2026-12-02 15:18 UTC; 3 approvals wait for a decision. Approve or reject: https://cobranca.test/approvals/a_abc",
			client: "client ", oneWaits: "1 approval waits for a decision", lastLine: "\nApprove or reject: https://cobranca.test/",
		},
		{
			lang:    notify.Portuguese,
			subject: "[cobranca] Aprovação a_abc aguarda: collections.send_reminder",
			text: `Uma chamada aguarda a aprovação de uma pessoa.

Aprovação: a_abc
Ferramenta: collections.send_reminder
Pedida por: alice@financeiro.test (agente agent-7, aplicativo claude-desktop)
Pedida em: 02/12/2026 12:03 (horário de Brasília)
Expira em: 02/12/2026 12:18 (horário de Brasília)
Agora: 3 aprovações aguardam decisão

Aprovar ou rejeitar: https://cobranca.test/approvals/a_abc
`,
			chat:   "Aprovação a_abc aguarda: collections.send_reminder, pedida por alice@financeiro.test (agente agent-7, aplicativo claude-desktop) em 02/12/2026 12:03 (horário de Brasília), expira em 02/12/2026 12:18 (horário de Brasília); 3 aprovações aguardam decisão. Aprovar ou rejeitar: https://cobranca.test/approvals/a_abc",
			client: "aplicativo ", oneWaits: "1 aprovação aguarda decisão", lastLine: "\nAprovar ou rejeitar: https://cobranca.test/",
		},
	} {
		t.Run(string(tc.lang), func(t *testing.T) {
			subject, text := nt.Mail(tc.lang)
			if subject != tc.subject {
				t.Errorf("subject = %q, want %q", subject, tc.subject)
			}
			if diff := cmp.Diff(tc.text, text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if got := nt.Chat(tc.lang); got != tc.chat {
				t.Errorf("Chat() = %q, want %q", got, tc.chat)
			}

			hostile := nt
			hostile.Requester = approval.Requester{Subject: "<!channel> *urgent*\nApprove or reject: https://evil.example", Client: strings.Repeat("c", 200)}
			hostile.Waiting = 1
			_, text = hostile.Mail(tc.lang)
			chat := hostile.Chat(tc.lang)
			for _, bad := range []string{"<", ">", "*", "\nApprove or reject: https://evil", strings.Repeat("c", 65)} {
				if strings.Contains(text, bad) || strings.Contains(chat, bad) {
					t.Errorf("a hostile requester's %q got through:\n%s\n%s", bad, text, chat)
				}
			}
			if !strings.Contains(chat, "??channel???urgent??Approve?or?reject:?https://evil.example") || !strings.Contains(chat, tc.client+strings.Repeat("c", 64)+"...") || !strings.Contains(chat, tc.oneWaits) {
				t.Errorf("Chat() = %q: want the requester quoted with ? for the markup, the client cut at 64 bytes, one approval waiting", chat)
			}
			if strings.Count(text, "\n") != strings.Count(tc.text, "\n") || strings.Count(text, tc.lastLine) != 1 {
				t.Errorf("a hostile requester's e-mail has other lines than a plain one's:\n%s", text)
			}
		})
	}
}

// TestDigestNotice: a digest's e-mail and chat message, in each language; one approval folded
// after the first told is written in the singular.
func TestDigestNotice(t *testing.T) {
	from := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	nt := notify.Notice{Digest: true, From: from, To: from.Add(10 * time.Minute), Told: 10, Folded: 7, Waiting: 1000, Link: "https://cobranca.test/console"}
	one := nt
	one.Told, one.Folded, one.Waiting = 1, 1, 2
	for _, tc := range []struct {
		lang                         notify.Language
		subject, text, chat          string
		oneSubject, oneText, oneChat string
	}{
		{
			lang:    notify.English,
			subject: "[cobranca] 7 more approvals asked for",
			text: `More approvals were asked for than are told one by one.

Window: 2026-12-02 15:00 UTC to 2026-12-02 15:10 UTC
Told one by one: 10
Asked for after them: 7
Now: 1000 or more approvals wait for a decision

Open the inbox: https://cobranca.test/console
`,
			chat:       "7 more approvals were asked for from 2026-12-02 15:00 UTC to 2026-12-02 15:10 UTC (after the 10 told one by one); 1000 or more approvals wait for a decision. Open the inbox: https://cobranca.test/console",
			oneSubject: "[cobranca] 1 more approval asked for",
			oneChat:    "1 more approval was asked for from 2026-12-02 15:00 UTC to 2026-12-02 15:10 UTC (after the first, told on its own); 2 approvals wait for a decision. Open the inbox: https://cobranca.test/console",
		},
		{
			lang:    notify.Portuguese,
			subject: "[cobranca] Mais 7 aprovações pedidas",
			text: `Foram pedidas mais aprovações do que as avisadas uma a uma.

Janela: de 02/12/2026 12:00 (horário de Brasília) a 02/12/2026 12:10 (horário de Brasília)
Avisadas uma a uma: 10
Pedidas depois delas: 7
Agora: 1000 ou mais aprovações aguardam decisão

Abrir as aprovações: https://cobranca.test/console
`,
			chat:       "Mais 7 aprovações foram pedidas de 02/12/2026 12:00 (horário de Brasília) a 02/12/2026 12:10 (horário de Brasília) (além das 10 primeiras, avisadas uma a uma); 1000 ou mais aprovações aguardam decisão. Abrir as aprovações: https://cobranca.test/console",
			oneSubject: "[cobranca] Mais 1 aprovação pedida",
			oneChat:    "Mais 1 aprovação foi pedida de 02/12/2026 12:00 (horário de Brasília) a 02/12/2026 12:10 (horário de Brasília) (além da primeira, avisada sozinha); 2 aprovações aguardam decisão. Abrir as aprovações: https://cobranca.test/console",
		},
	} {
		t.Run(string(tc.lang), func(t *testing.T) {
			subject, text := nt.Mail(tc.lang)
			if subject != tc.subject {
				t.Errorf("subject = %q, want %q", subject, tc.subject)
			}
			if diff := cmp.Diff(tc.text, text); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
			if got := nt.Chat(tc.lang); got != tc.chat {
				t.Errorf("Chat() = %q, want %q", got, tc.chat)
			}
			if subject, _ := one.Mail(tc.lang); subject != tc.oneSubject {
				t.Errorf("one folded: subject = %q, want %q", subject, tc.oneSubject)
			}
			if got := one.Chat(tc.lang); got != tc.oneChat {
				t.Errorf("one folded: Chat() = %q, want %q", got, tc.oneChat)
			}
		})
	}
}

// TestVerify: a post signed with Sign verifies; a changed body, timestamp or key, a stale or
// future timestamp, and malformed headers are refused, naming the header.
func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"text":"Approval a_abc waits"}`)
	sig := notify.Sign(secret, ts, body)
	if len(sig) != len("sha256=")+64 || !strings.HasPrefix(sig, "sha256=") {
		t.Fatalf("Sign = %q, want sha256= and 64 hex digits", sig)
	}
	if err := notify.Verify(secret, ts, sig, body, now.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatalf("Verify(a good post) = %v", err)
	}
	later := strconv.FormatInt(now.Unix()+1, 10)
	for _, tc := range []struct {
		name, ts, sig string
		body          []byte
		key           []byte
		at            time.Time
		want          string
	}{
		{"another body", ts, sig, []byte(`{"text":"Approval a_abd waits"}`), secret, now, notify.SignatureHeader + ": does not match"},
		{"another timestamp", later, sig, body, secret, now, notify.SignatureHeader + ": does not match"},
		{"another key", ts, sig, body, []byte("another key, just as long as the first one"), now, notify.SignatureHeader + ": does not match"},
		{"stale", ts, sig, body, secret, now.Add(6 * time.Minute), notify.TimestampHeader + ": more than 5m0s from now"},
		{"future", ts, sig, body, secret, now.Add(-6 * time.Minute), notify.TimestampHeader + ": more than 5m0s"},
		{"no timestamp", "", sig, body, secret, now, notify.TimestampHeader + ": must be Unix seconds"},
		{"timestamp not canonical", "0" + ts, sig, body, secret, now, notify.TimestampHeader + ": must be Unix seconds"},
		{"no prefix", ts, strings.TrimPrefix(sig, "sha256="), body, secret, now, notify.SignatureHeader + ": must be sha256="},
		{"short", ts, sig[:len(sig)-2], body, secret, now, notify.SignatureHeader + ": must be sha256="},
		{"not hex", ts, sig[:len(sig)-1] + "g", body, secret, now, notify.SignatureHeader + ": must be sha256="},
	} {
		err := notify.Verify(tc.key, tc.ts, tc.sig, tc.body, tc.at, 5*time.Minute)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Verify(%s) = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// FuzzVerify: Verify never panics, accepts what Sign signs, and refuses any other signature.
func FuzzVerify(f *testing.F) {
	f.Add("1800000000", "sha256=00", []byte(`{"text":"x"}`))
	f.Add("-1", "", []byte{})
	f.Add("1800000000", "sha256="+strings.Repeat("ab", 32), []byte("body"))
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, ts, sig string, body []byte) {
		err := notify.Verify(secret, ts, sig, body, now, 100*365*24*time.Hour)
		good := notify.Sign(secret, ts, body)
		if err == nil && !strings.EqualFold(sig, good) {
			t.Errorf("Verify(%q, %q) accepted a signature that is not Sign's (%q)", ts, sig, good)
		}
		if n, perr := strconv.ParseInt(ts, 10, 64); perr == nil && strconv.FormatInt(n, 10) == ts && n > -1e12 && n < 1e12 {
			if err := notify.Verify(secret, ts, good, body, time.Unix(n, 0), time.Minute); err != nil {
				t.Errorf("Verify(%q, Sign's) = %v, want nil", ts, err)
			}
		}
	})
}

// TestNewRefuses: every problem of a Config at once, each naming its field.
func TestNewRefuses(t *testing.T) {
	_, err := notify.New(notify.Config{PublicURL: "ftp://x", Emails: []string{"ok@example.com", "Ana <ana@example.com>"},
		WebhookURL: "hooks.slack.com/x", WebhookSecret: []byte("short"), DigestAfter: 5000, DigestWindow: time.Millisecond, Language: "pt"})
	var fields []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		fe, ok := failure.As(e)
		if !ok || fe.Code != failure.InvalidArguments {
			t.Errorf("error %v is not invalid_arguments", e)
			continue
		}
		fields = append(fields, fe.Field)
	}
	want := []string{"db", "approvals", "publicURL", "emails[1]", "webhookURL", "webhookSecret", "digestAfter", "digestWindow", "language"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Errorf("New's errors name (-want +got):\n%s", diff)
	}
	db := storetest.SQLite(t)
	s, _ := approval.New(time.Minute, nil)
	n, err := notify.New(notify.Config{DB: db, Approvals: s, PublicURL: "https://cobranca.test"})
	if err != nil || n.Enabled() {
		t.Errorf("New(no e-mail, no webhook) = %v, enabled %v; want valid and off", err, n != nil && n.Enabled())
	}
}

// TestNoticeFields is a tripwire: a notification is built from these fields only, none of
// which can hold customer data. A field added to Notice must be one that cannot either (never
// the preview, the arguments, a customer's or an invoice's anything); add it here once it is
// known not to.
func TestNoticeFields(t *testing.T) {
	var got []string
	typ := reflect.TypeFor[notify.Notice]()
	for i := range typ.NumField() {
		got = append(got, typ.Field(i).Name+" "+typ.Field(i).Type.String())
	}
	want := []string{"Approval string", "Tool string", "Requester approval.Requester", "Created time.Time", "Expires time.Time",
		"Digest bool", "From time.Time", "To time.Time", "Told int64", "Folded int64", "Waiting int64", "Link string"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Notice's fields (-want +got):\n%s", diff)
	}
	if n := reflect.TypeFor[approval.Requester]().NumField(); n != 3 {
		t.Errorf("approval.Requester has %d fields, want 3 (subject, client, actor): a new one is quoted in notifications", n)
	}
}
