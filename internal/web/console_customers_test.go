package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/reminders/reminderstest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// operator reads the messages' bodies; the viewer (carla) does not.
var operator = personWith("otto", mfa, web.RoleOperator)

// messages is what the customers and outbox tests write: 60 customers C-0 … C-59 with a draft
// each (reminderstest.Bulk), of which C-1 is do not contact, set by ana through collector-bot
// with a reason in markup, and C-2 paused; C-1's draft was refused by the mail server (550),
// C-2's sent, C-3's waits in the outbox, and C-4 … C-6's went in one bulk send, one of them
// sent.
type messages struct {
	drafts []string
	bulk   string
	until  string // C-2's pause's end
}

const dncReason = `pediu por telefone <b>não</b> "ligar"`

func writeMessages(t *testing.T, e *env) messages {
	t.Helper()
	ctx := context.Background()
	m := messages{drafts: reminderstest.Bulk(t, e.db, 60), bulk: ident.New(reminders.BulkIDPrefix)}
	now := e.clock.Now()
	m.until = now.AddDate(0, 1, 0).UTC().Format(customers.DateLayout)
	at := now.Add(-time.Hour)
	err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if _, err := customers.SetStatus(ctx, tx, "C-1", customers.Change{Status: customers.DoNotContact, Reason: dncReason, SetBy: "ana", SetByActor: "collector-bot"}, now); err != nil {
			return err
		}
		if _, err := customers.SetStatus(ctx, tx, "C-2", customers.Change{Status: customers.Paused, PausedUntil: m.until, Reason: "férias", SetBy: "bia"}, now); err != nil {
			return err
		}
		for i, id := range m.drafts[1:4] {
			if err := reminders.MarkQueued(ctx, tx, id, reminders.Queue{OutboxID: int64(i + 1), MessageID: fmt.Sprintf("<m%d@x>", i), By: "bruno"}, at.Add(time.Duration(i)*time.Minute)); err != nil {
				return err
			}
		}
		if err := (reminders.Delivery{}).Undeliverable(ctx, tx, m.drafts[1], 1, "smtp: mailbox unavailable (reply 550 5.1.1)", at); err != nil {
			return err
		}
		if err := (reminders.Delivery{}).Delivered(ctx, tx, []outbox.Accepted{{Ref: m.drafts[2], Entry: 2, At: at}}); err != nil {
			return err
		}
		var entries []reminders.BulkEntry
		for i, id := range m.drafts[4:7] {
			entries = append(entries, reminders.BulkEntry{ID: id, OutboxID: int64(10 + i), MessageID: fmt.Sprintf("<b%d@x>", i)})
		}
		if err := reminders.CreateBulk(ctx, tx, reminders.Bulk{ID: m.bulk, By: "bruno", PlanHash: strings.Repeat("ab", 32), Total: 3, Skipped: 1, CreatedAt: at}, entries); err != nil {
			return err
		}
		return (reminders.Delivery{}).Delivered(ctx, tx, []outbox.Accepted{{Ref: entries[0].ID, Entry: entries[0].OutboxID, At: at}})
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConsoleCustomers: the customers, a customer's and the outbox pages, on both stores.
func TestConsoleCustomers(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		m := writeMessages(t, e)
		t.Run("customers", func(t *testing.T) { consoleCustomers(t, e, m) })
		t.Run("customer", func(t *testing.T) { consoleCustomer(t, e, m) })
		t.Run("outbox", func(t *testing.T) { consoleOutbox(t, e, m) })
		t.Run("bad parameters", func(t *testing.T) { consoleMessagesBadParams(t, e) })
		t.Run("portuguese", func(t *testing.T) { consoleMessagesPortuguese(t, e) })
	})
}

var customerRowRE = regexp.MustCompile(`<code>(C-[0-9]+)</code></small></td>`)

// consoleCustomers: 50 customers a page in id order, each with its contact status and who set
// it, through which agent, when and why (the reason shown as text); a filter by status keeps
// to it across pages; the agent's session sees nothing.
func consoleCustomers(t *testing.T, e *env, m messages) {
	b := e.browser(t)
	p := b.open(t, web.CustomersPath, viewer)
	rows := customerRowRE.FindAllStringSubmatch(p.body, -1)
	if p.resp.StatusCode != http.StatusOK || len(rows) != 50 || rows[0][1] != "C-0" || rows[1][1] != "C-1" || rows[2][1] != "C-10" {
		t.Fatalf("the customers' first page = %d with %d rows, want 200 with 50 in id order:\n%s", p.resp.StatusCode, len(rows), p.body)
	}
	for _, want := range []string{
		`<a href="/console/customers" aria-current="page">Customers</a>`,
		`<span class="status-do_not_contact">do not contact</span>`,
		`ana<br><small>through the agent <code>collector-bot</code></small>`,
		`pediu por telefone &lt;b&gt;não&lt;/b&gt; &#34;ligar&#34;`,
		`<span class="status-paused">paused</span> until ` + m.until,
		`<a href="/console/customers/detail?id=C-1">`,
		`never set`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the customers page lacks %q:\n%s", want, p.body)
		}
	}
	if strings.Contains(p.body, "<b>não</b>") {
		t.Errorf("the reason is shown as markup:\n%s", p.body)
	}
	next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p.body)
	if next == nil {
		t.Fatalf("no link to the next page:\n%s", p.body)
	}
	p2 := b.get(t, strings.ReplaceAll(next[1], "&amp;", "&"))
	if rows := customerRowRE.FindAllStringSubmatch(p2.body, -1); len(rows) != 10 || strings.Contains(p2.body, `rel="next"`) || !strings.Contains(p2.body, "First page") {
		t.Errorf("the second page: %d rows, want the last 10, a link to the first and none to a next:\n%s", len(rows), p2.body)
	}

	for status, want := range map[string][]string{"do_not_contact": {"C-1"}, "paused": {"C-2"}} {
		p := b.get(t, web.CustomersPath+"?status="+status)
		var got []string
		for _, r := range customerRowRE.FindAllStringSubmatch(p.body, -1) {
			got = append(got, r[1])
		}
		if strings.Join(got, " ") != strings.Join(want, " ") || !strings.Contains(p.body, `<option value="`+status+`" selected>`) {
			t.Errorf("status=%s lists %v, want %v with the filter kept:\n%s", status, got, want, p.body)
		}
	}
	// The filter is kept on the next page.
	p = b.get(t, web.CustomersPath+"?status=contactable")
	if next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p.body); next == nil || !strings.Contains(next[1], "status=contactable") {
		t.Errorf("the contactable customers' next page does not keep the filter:\n%s", p.body)
	}

	bot := e.browser(t).open(t, web.CustomersPath, agent("ana"))
	refused(t, "an agent's session", bot, http.StatusForbidden, string(web.CodeConsoleAgent))
	if strings.Contains(bot.body, "C-1") {
		t.Errorf("the agent's refusal shows a customer:\n%s", bot.body)
	}
}

// consoleCustomer: a customer's page lists its drafts and its sends, with subjects, states,
// dates and the mail server's reply; the operator reads the bodies, the viewer never does.
func consoleCustomer(t *testing.T, e *env, m messages) {
	body := func(id string) string {
		r, err := reminders.Get(context.Background(), e.db, id)
		if err != nil {
			t.Fatal(err)
		}
		// The body's first line, as the page writes it (escaped).
		first, _, _ := strings.Cut(r.Body, "\n")
		return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(first)
	}
	rec, err := reminders.Get(context.Background(), e.db, m.drafts[1])
	if err != nil {
		t.Fatal(err)
	}
	path := web.CustomerPath + "?id=C-1"
	op := e.browser(t).open(t, path, operator)
	vw := e.browser(t).open(t, path, viewer)
	for who, p := range map[string]page{"operator": op, "viewer": vw} {
		for _, want := range []string{
			"<h1>Customer</h1>", `<h2 id="who">Mercado 1 Ltda</h2>`, "<code>" + m.drafts[1] + "</code>",
			`<span class="draft-undeliverable">undeliverable</span>`, `<code class="reply">smtp: mailbox unavailable (reply 550 5.1.1)</code>`,
			`<a href="/console/customers" aria-current="page">Customers</a>`, "bruno", `pediu por telefone &lt;b&gt;não&lt;/b&gt;`,
		} {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s: C-1's page lacks %q:\n%s", who, want, p.body)
			}
		}
		if strings.Contains(p.body, "<code>"+m.drafts[2]+"</code>") {
			t.Errorf("%s: C-1's page shows C-2's draft:\n%s", who, p.body)
		}
	}
	if !strings.Contains(op.body, body(m.drafts[1])) || strings.Count(op.body, "<details>") != 2 || strings.Contains(op.body, "bodies-withheld") {
		t.Errorf("the operator does not read the body of %s (%q) in the drafts and the sends:\n%s", m.drafts[1], body(m.drafts[1]), op.body)
	}
	if strings.Contains(vw.body, body(m.drafts[1])) || strings.Contains(vw.body, "<details>") || !strings.Contains(vw.body, `id="bodies-withheld"`) ||
		strings.Contains(vw.body, rec.Subject+"\n") {
		t.Errorf("the viewer sees a body, or is not told why none:\n%s", vw.body)
	}
	if !strings.Contains(vw.body, rec.Subject) && !strings.Contains(vw.body, strings.ReplaceAll(rec.Subject, "'", "&#39;")) {
		t.Errorf("the viewer does not see the subject %q:\n%s", rec.Subject, vw.body)
	}
	// A customer with no send says so.
	if p := e.browser(t).open(t, web.CustomerPath+"?id=C-40", viewer); !strings.Contains(p.body, "No reminder was sent to this customer.") ||
		!strings.Contains(p.body, `<span class="draft-draft">draft</span>`) {
		t.Errorf("C-40's page:\n%s", p.body)
	}
	// A customer who is not there.
	p := e.browser(t).open(t, web.CustomerPath+"?id=C-999", viewer)
	refused(t, "an unknown customer", p, http.StatusUnprocessableEntity, string(customers.CodeNotFound))
	if !strings.Contains(p.body, "id: names no customer") {
		t.Errorf("the refusal does not name the field:\n%s", p.body)
	}
}

var outboxRowRE = regexp.MustCompile(`<td data-label="Subject">[^<]*<br><small><code>(d_[a-z0-9]+)</code>`)

// consoleOutbox: each tab lists the drafts of its state, the latest queued first, the
// undeliverable with the mail server's reply; the bulk send with its progress; the outbox's
// depth. No body is shown there, to anyone.
func consoleOutbox(t *testing.T, e *env, m messages) {
	b := e.browser(t)
	p := b.open(t, web.OutboxPath, operator)
	ids := func(p page) []string {
		var out []string
		for _, r := range outboxRowRE.FindAllStringSubmatch(p.body, -1) {
			out = append(out, r[1])
		}
		return out
	}
	// Queued: C-3's (queued last of the three) and the bulk's two not sent.
	if got := ids(p); len(got) != 3 || got[0] != m.drafts[3] || !strings.Contains(p.body, `<a href="/console/outbox?state=queued" aria-current="page">queued</a>`) {
		t.Errorf("the queued tab lists %v, want %s first and the bulk's two:\n%s", got, m.drafts[3], p.body)
	}
	for _, want := range []string{
		"<code>" + m.bulk + "</code>", `<progress max="3" value="1" aria-label="Progress ` + m.bulk + `">`, `1 of 3`, "queued 2 · sent 1 · undeliverable 0 · skipped 1",
		"Messages in the outbox not sent yet</dt><dd class=\"num\">0</dd>", `<a href="/console/outbox" aria-current="page">Outbox</a>`,
		`<a href="/console/customers/detail?id=C-3">Mercado 3 Ltda</a>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the outbox page lacks %q:\n%s", want, p.body)
		}
	}
	und := b.get(t, web.OutboxPath+"?state=undeliverable")
	if got := ids(und); len(got) != 1 || got[0] != m.drafts[1] || !strings.Contains(und.body, `<code class="reply">smtp: mailbox unavailable (reply 550 5.1.1)</code>`) {
		t.Errorf("the undeliverable tab lists %v, want %s with the reply code:\n%s", got, m.drafts[1], und.body)
	}
	sent := b.get(t, web.OutboxPath+"?state=sent")
	if got := ids(sent); len(got) != 2 || !strings.Contains(strings.Join(got, " "), m.drafts[2]) {
		t.Errorf("the sent tab lists %v, want %s and the bulk's one sent:\n%s", got, m.drafts[2], sent.body)
	}
	for _, pg := range []page{p, und, sent} {
		if strings.Contains(pg.body, "<details>") || strings.Contains(pg.body, "<pre>") {
			t.Errorf("the outbox shows a body:\n%s", pg.body)
		}
	}
}

// consoleMessagesBadParams: a parameter the pages cannot read is refused, naming it.
func consoleMessagesBadParams(t *testing.T, e *env) {
	b := e.browser(t)
	b.open(t, web.CustomersPath, viewer)
	for _, tc := range []struct{ path, field string }{
		{web.CustomersPath + "?status=blocked", "status"},
		{web.CustomersPath + "?after=" + url.QueryEscape(" C-1"), "after"},
		{web.CustomerPath, "id"},
		{web.CustomerPath + "?id=" + url.QueryEscape("C-1\x00"), "id"},
		{web.CustomerPath + "?id=C-1&after=12", "after"},
		{web.CustomerPath + "?id=C-1&after=12.x_1", "after"},
		{web.OutboxPath + "?state=draft", "state"},
		{web.OutboxPath + "?after=-1.d_abc", "after"},
		{web.OutboxPath + "?after=01." + ident.New(reminders.IDPrefix), "after"},
		{web.OutboxPath + "?bulks=5." + ident.New(reminders.IDPrefix), "bulks"},
	} {
		p := b.get(t, tc.path)
		refused(t, tc.path, p, http.StatusBadRequest, string(failure.InvalidArguments))
		if !strings.Contains(p.body, tc.field+": ") {
			t.Errorf("%s: the refusal does not name %s:\n%s", tc.path, tc.field, p.body)
		}
	}
}

// consoleMessagesPortuguese: the pages in Portuguese, their links keeping the language.
func consoleMessagesPortuguese(t *testing.T, e *env) {
	b := e.browser(t)
	b.open(t, web.CustomersPath, viewer)
	for _, tc := range []struct {
		path string
		want []string
	}{
		{web.CustomersPath + "?lang=pt-BR", []string{"<h1>Clientes</h1>", "não contatar", `<a href="/console/customers/detail?id=C-1&amp;lang=pt-BR">`,
			`<input type="hidden" name="lang" value="pt-BR">`, "Próxima página", `href="/console/outbox?lang=pt-BR"`}},
		{web.CustomerPath + "?id=C-1&lang=pt-BR", []string{"<h1>Cliente</h1>", "não entregável", "Rascunhos", "R$ 150,01",
			`<a href="/console/customers?lang=pt-BR">Voltar aos clientes</a>`, "O texto das mensagens é mostrado só"}},
		{web.OutboxPath + "?lang=pt-BR&state=undeliverable", []string{"<h1>Caixa de saída</h1>", "Envios em lote", "1 de 3",
			`<a href="/console/outbox?lang=pt-BR&amp;state=sent">enviado</a>`, "Resposta do servidor de e-mail"}},
	} {
		p := b.get(t, tc.path)
		if p.resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", tc.path, p.resp.StatusCode)
		}
		for _, want := range tc.want {
			if !strings.Contains(p.body, want) {
				t.Errorf("%s lacks %q:\n%s", tc.path, want, p.body)
			}
		}
	}
}
