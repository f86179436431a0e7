package collections_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// The outbox's owner of reminder messages is reminders'.
var _ outbox.Owner = reminders.Delivery{}

const (
	send = collections.SendReminderName
	mfa  = "urn:mfa" // the acr a step-up asks for (COBRANCA_STEPUP_ACR)
)

var (
	// sender is an agent that prepares and sends reminders for ana; urlClient a 2026-07-28
	// client that opens URL elicitations.
	sender = &auth.Principal{Subject: "ana", ClientID: "collector-bot", Actor: "collector-bot", Kind: auth.KindAgent,
		Scopes: []string{"collections:read", "reminders:write", "reminders:send"}}
	urlClient = pipeline.Client{Protocol: "2026-07-28", InputRequests: true, Elicitation: true, ElicitationURL: true}
	// owner is the person who sets contact statuses (no confirmation: a person).
	owner = &auth.Principal{Subject: "carla", ClientID: "ops-console", Kind: auth.KindHuman, Scopes: []string{"customers:write"}}
)

// sendEnv is env with the critical tool served: send_reminder enqueueing in a running outbox
// that delivers to a real SMTP server, approvals at pipelinetest.PublicURL, and the Decider a
// person approves through with a real development token.
type sendEnv struct {
	*env
	smtp      *smtptest.Server
	auth      *auth.Authenticator
	approvals *approval.Store
	d         *approval.Decider
	mail      *outbox.Outbox
	opts      pipeline.Options // e.p's
}

func newSendEnv(t testing.TB, db store.DB) *sendEnv {
	t.Helper()
	s := smtptest.New(t)
	return newSendEnvOn(t, db, s, func(now func() time.Time) *outbox.Outbox {
		return outboxtest.Deliver(t, db, s, outbox.Config{Owner: reminders.Delivery{}, Now: now, MaxAttempts: 3})
	})
}

// newSendEnvOn is newSendEnv delivering to s through the outbox mail returns, running until
// the test ends, given the environment's clock.
func newSendEnvOn(t testing.TB, db store.DB, s *smtptest.Server, mail func(now func() time.Time) *outbox.Outbox) *sendEnv {
	t.Helper()
	ctx := context.Background()
	e := &sendEnv{env: &env{db: db, now: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}, smtp: s}
	var err error
	if e.auth, err = auth.New(ctx, auth.Config{DataDir: t.TempDir(), BaseURL: "http://127.0.0.1:8080", StepUpACR: []string{mfa}, Now: e.clock}); err != nil {
		t.Fatal(err)
	}
	e.mail = mail(e.clock)
	tools, err := collections.SendTools(collections.Settings{}, e.mail)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := idempotency.New(db.Dialect(), time.Hour, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	if e.approvals, err = approval.New(15*time.Minute, e.clock); err != nil {
		t.Fatal(err)
	}
	alog, digest := pipelinetest.AuditLog(t, db)
	e.opts = pipeline.Options{Tools: tools, Now: e.clock, DB: db, Keys: keys, Auditor: pipeline.NewAuditor(alog, digest),
		StepUp: []string{mfa}, Approvals: e.approvals, PublicURL: pipelinetest.PublicURL, States: pipelinetest.Ring(t)}
	e.p = pipelinetest.Product(t, e.opts)
	e.d = &approval.Decider{Store: e.approvals, DB: db, Verifier: e.auth, Audit: alog, StepUpACR: []string{mfa}, Now: e.clock,
		Contract: func(name string) *contract.Contract {
			for _, c := range e.p.Contracts() {
				if c.Name == name {
					return c
				}
			}
			return nil
		}}
	return e
}

// eachSend runs fn on SQLite and on PostgreSQL (as the serving role), for a client of each
// revision.
func eachSend(t *testing.T, fn func(t *testing.T, e *sendEnv, cl pipeline.Client)) {
	for name, cl := range map[string]pipeline.Client{"2026-07-28": urlClient, "2025-11-25": legacy} {
		t.Run(name, func(t *testing.T) {
			storetest.Each(t, pg, func(t *testing.T, db store.DB) { fn(t, newSendEnv(t, db), cl) })
		})
	}
}

// sendCall is the agent's call to send draft under key, after the round retry asked for.
func (e *sendEnv) sendCall(pr *auth.Principal, cl pipeline.Client, draft, key string, retry pipelinetest.Asked) pipeline.Result {
	args := fmt.Sprintf(`{"draftId":%q,"idempotencyKey":%q}`, draft, key)
	return e.p.Do(context.Background(), retry.Retry(pipeline.Call{Principal: pr, RequestID: "r-send", Tool: send, Args: json.RawMessage(args), Client: cl}))
}

// approve has a stepped-up person, bruno, approve the approval id through the Decider.
func (e *sendEnv) approve(t testing.TB, id string) {
	t.Helper()
	tok, err := e.auth.Mint(auth.MintOptions{Subject: "bruno", ACR: mfa, TTL: time.Hour, Roles: []string{collections.ApproverRole}})
	if err != nil {
		t.Fatal(err)
	}
	if a, err := e.d.Decide(context.Background(), id, tok, true); err != nil || a.State != approval.Approved {
		t.Fatalf("Decide(%s) = %v, %v; want approved", id, a, err)
	}
}

// asked makes the agent's first call for draft under key and returns the approval it waits for.
func (e *sendEnv) asked(t *testing.T, cl pipeline.Client, draft, key string) pipelinetest.Asked {
	t.Helper()
	return pipelinetest.AskedOf(t, e.sendCall(sender, cl, draft, key, pipelinetest.Asked{}), cl)
}

func (e *sendEnv) draftNow(t *testing.T, id string) reminders.Record {
	t.Helper()
	d, err := reminders.Get(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitDraft polls until the draft id is in state want.
func (e *sendEnv) waitDraft(t *testing.T, id string, want reminders.State) reminders.Record {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d := e.draftNow(t, id)
		if d.State == want {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("draft %s is %s, want %s", id, d.State, want)
		}
	}
}

// jobs counts the outbox's entries.
func (e *sendEnv) jobs(t *testing.T) int {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM river_job`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// sentEvents counts the committed email.external.sent events.
func (e *sendEnv) sentEvents(t *testing.T) int {
	t.Helper()
	var n int64
	if err := e.db.QueryRow(context.Background(), `SELECT COUNT(*) FROM audit_event WHERE event = 'email.external.sent' AND outcome = 'allowed'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func (e *sendEnv) approvalState(t *testing.T, id string) approval.State {
	t.Helper()
	a, err := e.approvals.Get(context.Background(), e.db, id)
	if err != nil {
		t.Fatal(err)
	}
	return a.State
}

// sentPage is a page of list_drafts, with the fields of sent drafts.
type sentPage struct {
	Drafts []struct {
		ID, State, MessageID, QueuedAt, SentAt, FailedAt, FailureReason string
	} `json:"drafts"`
}

type sendAnswer struct {
	DraftID   string `json:"draftId"`
	MessageID string `json:"messageId"`
	To        string `json:"to"`
	State     string `json:"state"`
	QueuedAt  string `json:"queuedAt"`
}

// TestSendReminderRoundTrip: the agent's call waits for a person's approval (the preview shows
// the recipient, the status in effect, the subject and the whole body), enqueues nothing until
// then; a stepped-up person approves through the Decider; the retry queues the draft, and the
// SMTP server receives exactly one message with the outbox's Message-ID; the draft becomes sent;
// email.external.sent is audited once; a repeat returns the stored answer and sends nothing.
func TestSendReminderRoundTrip(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		ctx := context.Background()
		e.customer(t, customers.Record{ID: "C-1", Name: `Padaria "São João" {{.Secret}}`, Email: "financeiro@padaria.example"})
		d := e.draft(t, "C-1", `Padaria "São João" {{.Secret}}`, "NF-1")
		ask := e.asked(t, cl, d.ID, "k-1")
		a, err := e.approvals.Get(ctx, e.db, ask.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"Padaria \"São João\" {{.Secret}}"`, `"financeiro@padaria.example"`, `customer "C-1"`,
			"contact status in effect: contactable", "Subject: \"" + d.Subject + "\"\n"} {
			if !strings.Contains(a.Preview, want) {
				t.Errorf("preview lacks %s:\n%s", want, a.Preview)
			}
		}
		for line := range strings.Lines(d.Body) {
			if !strings.Contains(a.Preview, "| "+strings.TrimRight(line, "\n")+"\n") {
				t.Errorf("preview lacks the body line %q:\n%s", line, a.Preview)
			}
		}
		if e.jobs(t) != 0 || e.draftNow(t, d.ID).State != reminders.Draft {
			t.Fatal("something was enqueued, or the draft changed, before the approval")
		}
		e.approve(t, ask.ID)
		done := e.sendCall(sender, cl, d.ID, "k-1", ask)
		got := decode[sendAnswer](t, done)
		if got.DraftID != d.ID || got.To != "financeiro@padaria.example" || got.State != "queued" || got.QueuedAt != "2026-07-01T12:00:00Z" ||
			!strings.HasPrefix(got.MessageID, "<") || !strings.HasSuffix(got.MessageID, ".outbox@cobranca.test>") {
			t.Errorf("answer = %+v", got)
		}
		msgs := e.smtp.Wait(t, 1, 15*time.Second)
		m := msgs[0]
		if m.MessageID != got.MessageID || !slices.Equal(m.To, []string{"financeiro@padaria.example"}) || m.From != "cobranca@cobranca.test" ||
			m.Subject != d.Subject || outboxtest.Text(m.Body) != strings.TrimSpace(d.Body) {
			t.Errorf("received %+v, want the draft to its recipient with Message-ID %s", m, got.MessageID)
		}
		sent := e.waitDraft(t, d.ID, reminders.Sent)
		if s := sent.Sending; s == nil || s.MessageID != got.MessageID || s.QueuedBy != "ana" || s.QueuedByActor != "collector-bot" ||
			s.ApprovalID != ask.ID || !s.QueuedAt.Equal(e.clock()) || !s.DeliveredAt.Equal(e.clock()) {
			t.Errorf("sent draft's sending = %+v", sent.Sending)
		}
		if st := e.approvalState(t, ask.ID); st != approval.Executed {
			t.Errorf("approval is %s, want executed", st)
		}
		if n := e.sentEvents(t); n != 1 {
			t.Errorf("%d email.external.sent events, want 1", n)
		}
		// A repeat of the call: the stored answer, nothing sent again.
		repeat := e.sendCall(sender, cl, d.ID, "k-1", ask)
		if repeat.Kind != pipeline.Complete || !bytes.Equal(repeat.Structured, done.Structured) {
			t.Errorf("repeat = %v %v %s, want the stored %s", repeat.Kind, repeat.Err, repeat.Structured, done.Structured)
		}
		time.Sleep(300 * time.Millisecond)
		if n := len(e.smtp.Messages()); n != 1 || e.jobs(t) != 1 || e.sentEvents(t) != 1 {
			t.Errorf("after the repeat: %d messages, %d entries, %d events; want 1 each", n, e.jobs(t), e.sentEvents(t))
		}
		// list_drafts shows it sent, with its Message-ID.
		page := decode[sentPage](t, e.call(reader, collections.ListDraftsName, map[string]any{"customerId": "C-1"}))
		if len(page.Drafts) != 1 || page.Drafts[0].State != "sent" || page.Drafts[0].MessageID != got.MessageID || page.Drafts[0].SentAt == "" {
			t.Errorf("list_drafts = %+v, want the draft sent", page.Drafts)
		}
		// get_customer lists it among the customer's sends, no longer open.
		cust := decode[map[string]any](t, e.call(reader, collections.GetCustomerName, map[string]any{"customerId": "C-1"}))
		wantSends := []any{map[string]any{"draftId": d.ID, "subject": d.Subject, "state": "sent", "messageId": got.MessageID,
			"queuedAt": "2026-07-01T12:00:00Z", "sentAt": "2026-07-01T12:00:00Z"}}
		if diff := cmp.Diff(wantSends, cust["recentSends"]); diff != "" || len(cust["openDrafts"].([]any)) != 0 {
			t.Errorf("get_customer's recentSends (-want +got):\n%s\nopenDrafts %v, want none", diff, cust["openDrafts"])
		}
	})
}

// TestSendReminderOncePerDraft: two calls for one draft, under two keys, both approved: the
// first sends it, the second is refused draft_not_open at execution, sends nothing, and its
// approval stays approved (not used). A call for a draft already queued is refused at once,
// before a person is asked; so is one for a discarded draft, or a draft no one wrote.
func TestSendReminderOncePerDraft(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "oficina@example.com"})
		d := e.draft(t, "C-1", "Oficina", "NF-1")
		one, two := e.asked(t, cl, d.ID, "k-1"), e.asked(t, cl, d.ID, "k-2")
		e.approve(t, one.ID)
		e.approve(t, two.ID)
		if res := e.sendCall(sender, cl, d.ID, "k-1", one); res.Kind != pipeline.Complete {
			t.Fatalf("first send = %v %v", res.Kind, res.Err)
		}
		res := e.sendCall(sender, cl, d.ID, "k-2", two)
		if code, field := failed(res); code != reminders.CodeDraftNotOpen || field != "draftId" ||
			!strings.Contains(res.Err.Message, "is queued") && !strings.Contains(res.Err.Message, "is sent") { // the worker may have delivered it already
			t.Errorf("second approved send = %v %v, want draft_not_open naming the state", res.Kind, res.Err)
		}
		if st := e.approvalState(t, two.ID); st != approval.Approved {
			t.Errorf("the refused call's approval is %s, want approved (not used)", st)
		}
		e.waitDraft(t, d.ID, reminders.Sent)
		time.Sleep(300 * time.Millisecond)
		if n := len(e.smtp.Messages()); n != 1 || e.jobs(t) != 1 || e.sentEvents(t) != 1 {
			t.Errorf("%d messages, %d entries, %d events; want 1 each", n, e.jobs(t), e.sentEvents(t))
		}
		// Refused before anyone is asked: no approval is recorded.
		e.customer(t, customers.Record{ID: "C-2", Name: "Mercado", Email: "mercado@example.com"})
		gone := e.draft(t, "C-2", "Mercado", "NF-2")
		if done := e.do(owner, legacy, set, `{"customerId":"C-2","status":"do_not_contact","reason":"pediu","idempotencyKey":"s-1"}`); done.Kind != pipeline.Complete {
			t.Fatalf("set do_not_contact = %v %v", done.Kind, done.Err)
		}
		for _, tc := range []struct {
			name, draft string
			code        failure.Code
		}{
			{"already sent", d.ID, reminders.CodeDraftNotOpen},
			{"discarded", gone.ID, reminders.CodeDraftNotOpen},
			{"unknown", "d_" + strings.Repeat("a", 26), reminders.CodeDraftNotFound},
		} {
			res := e.sendCall(sender, cl, tc.draft, "k-"+tc.name, pipelinetest.Asked{})
			if code, field := failed(res); code != tc.code || field != "draftId" {
				t.Errorf("%s: %v %v, want %s on draftId", tc.name, res.Kind, res.Err, tc.code)
			}
		}
		if list, err := e.approvals.List(context.Background(), e.db, time.Time{}, 10); err != nil || len(list) != 2 {
			t.Errorf("approvals = %d (%v), want the 2 approved ones only", len(list), err)
		}
	})
}

// TestSendReminderRecheckedAtExecution: what changed after a person approved the send refuses
// it when it runs, in its transaction: the customer set do_not_contact or paused (directly on
// the record; set_contact_status discards its drafts too, which refuses it as not open),
// another customer with the same address set do_not_contact. Nothing is enqueued or sent, no
// email.external.sent is committed, the draft stays a draft, and the approval stays approved:
// once the customer may be contacted again, the same retry sends it.
func TestSendReminderRecheckedAtExecution(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		ctx := context.Background()
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "contas@grupo.example"})
		e.customer(t, customers.Record{ID: "C-2", Name: "Oficina Filial", Email: "CONTAS@grupo.example"})
		setStatus := func(id string, ch customers.Change) {
			t.Helper()
			ch.SetBy = "carla"
			if err := e.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				_, err := customers.SetStatus(ctx, tx, id, ch, e.clock())
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		contactable := customers.Change{Status: customers.Contactable, Reason: "voltou"}
		for i, tc := range []struct {
			name   string
			change func()
			code   failure.Code
			says   string
		}{
			{"do_not_contact", func() {
				setStatus("C-1", customers.Change{Status: customers.DoNotContact, Reason: "pediu"})
			}, customers.CodeDoNotContact, "asked not to be contacted"},
			{"paused", func() {
				setStatus("C-1", customers.Change{Status: customers.Paused, PausedUntil: "2026-07-20", Reason: "férias"})
			}, customers.CodePaused, "2026-07-20"},
			{"same address do_not_contact", func() {
				if res := e.do(owner, legacy, set, `{"customerId":"C-2","status":"do_not_contact","reason":"pediu","idempotencyKey":"s-addr"}`); res.Kind != pipeline.Complete {
					t.Fatalf("set_contact_status on C-2 = %v %v", res.Kind, res.Err)
				}
			}, customers.CodeDoNotContact, "e-mail address"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				jobs, events := e.jobs(t), e.sentEvents(t)
				d := e.draft(t, "C-1", "Oficina", fmt.Sprintf("NF-%d", i))
				key := "k-" + tc.name
				ask := e.asked(t, cl, d.ID, key)
				e.approve(t, ask.ID)
				tc.change()
				res := e.sendCall(sender, cl, d.ID, key, ask)
				if code, field := failed(res); code != tc.code || field != "draftId" || !strings.Contains(res.Err.Message, tc.says) {
					t.Fatalf("send after the change = %v %v, want %s saying %q", res.Kind, res.Err, tc.code, tc.says)
				}
				if e.jobs(t) != jobs || e.sentEvents(t) != events || e.draftNow(t, d.ID).State != reminders.Draft {
					t.Errorf("refused: %d new entries, %d new events, draft %s; want none, none, draft", e.jobs(t)-jobs, e.sentEvents(t)-events, e.draftNow(t, d.ID).State)
				}
				if st := e.approvalState(t, ask.ID); st != approval.Approved {
					t.Errorf("the refused call's approval is %s, want approved", st)
				}
				// Contactable again (both customers): the same retry, still approved, sends.
				setStatus("C-1", contactable)
				setStatus("C-2", contactable)
				if res := e.sendCall(sender, cl, d.ID, key, ask); res.Kind != pipeline.Complete {
					t.Fatalf("retry once contactable = %v %v", res.Kind, res.Err)
				}
				e.waitDraft(t, d.ID, reminders.Sent)
				if n := len(e.smtp.Messages()); n != i+1 || e.sentEvents(t) != events+1 {
					t.Errorf("%d messages received, %d new events; want %d, 1", n, e.sentEvents(t)-events, i+1)
				}
			})
		}
	})
}

// TestSendReminderUndeliverable: the mail server refuses the message for good (5xx): the draft
// becomes undeliverable with the reason, which names no recipient, and nothing is retried.
func TestSendReminderUndeliverable(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newSendEnv(t, db)
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "ninguem@oficina.example"})
		d := e.draft(t, "C-1", "Oficina", "NF-1")
		ask := e.asked(t, urlClient, d.ID, "k-1")
		e.approve(t, ask.ID)
		e.smtp.Refuse(smtptest.Permanent)
		if res := e.sendCall(sender, urlClient, d.ID, "k-1", ask); res.Kind != pipeline.Complete {
			t.Fatalf("send = %v %v", res.Kind, res.Err)
		}
		failedDraft := e.waitDraft(t, d.ID, reminders.Undeliverable)
		if s := failedDraft.Sending; s == nil || !strings.Contains(s.FailureReason, "550") || strings.Contains(s.FailureReason, "oficina.example") ||
			s.FailedAt.IsZero() || !s.DeliveredAt.IsZero() {
			t.Errorf("undeliverable draft's sending = %+v, want the 550 without the recipient", failedDraft.Sending)
		}
		page := decode[sentPage](t, e.call(reader, collections.ListDraftsName, map[string]any{"state": "undeliverable"}))
		if len(page.Drafts) != 1 || page.Drafts[0].ID != d.ID || page.Drafts[0].FailureReason != failedDraft.Sending.FailureReason || page.Drafts[0].FailedAt == "" {
			t.Errorf("list_drafts of undeliverable drafts = %+v", page.Drafts)
		}
		time.Sleep(300 * time.Millisecond)
		if n := len(e.smtp.Messages()); n != 0 || e.smtp.Refusing() != 0 {
			t.Errorf("%d messages received, %d refusals left; want none, none", n, e.smtp.Refusing())
		}
	})
}

// TestSendReminderScope: an agent without reminders:send is refused before anything else:
// no approval is asked for.
func TestSendReminderScope(t *testing.T) {
	e := newSendEnv(t, storetest.SQLite(t))
	e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "contas@oficina.example"})
	d := e.draft(t, "C-1", "Oficina", "NF-1")
	res := e.sendCall(writer, urlClient, d.ID, "k-1", pipelinetest.Asked{})
	if res.Kind != pipeline.Denied || res.Err.Code != failure.InsufficientScope || len(res.Missing) != 1 || res.Missing[0] != "reminders:send" {
		t.Errorf("send without reminders:send = %v %v %v, want denied, missing reminders:send", res.Kind, res.Err, res.Missing)
	}
	if list, err := e.approvals.List(context.Background(), e.db, time.Time{}, 10); err != nil || len(list) != 0 {
		t.Errorf("approvals = %d (%v), want none", len(list), err)
	}
}

// TestSendReminderDiscardedAfterApproval: set_contact_status do_not_contact, after a person
// approved the send, discards the customer's open drafts in its transaction; the retry then
// finds the draft discarded (draft_not_open), sends nothing, and leaves the approval approved.
func TestSendReminderDiscardedAfterApproval(t *testing.T) {
	eachSend(t, func(t *testing.T, e *sendEnv, cl pipeline.Client) {
		e.customer(t, customers.Record{ID: "C-1", Name: "Oficina", Email: "contas@oficina.example"})
		d := e.draft(t, "C-1", "Oficina", "NF-1")
		ask := e.asked(t, cl, d.ID, "k-1")
		e.approve(t, ask.ID)
		if res := e.do(owner, legacy, set, `{"customerId":"C-1","status":"do_not_contact","reason":"pediu","idempotencyKey":"s-1"}`); res.Kind != pipeline.Complete {
			t.Fatalf("set do_not_contact = %v %v", res.Kind, res.Err)
		}
		res := e.sendCall(sender, cl, d.ID, "k-1", ask)
		if code, _ := failed(res); code != reminders.CodeDraftNotOpen || !strings.Contains(res.Err.Message, "discarded") {
			t.Errorf("send after do_not_contact = %v %v, want draft_not_open (discarded)", res.Kind, res.Err)
		}
		if e.jobs(t) != 0 || e.sentEvents(t) != 0 || e.approvalState(t, ask.ID) != approval.Approved {
			t.Errorf("%d entries, %d events, approval %s; want none, none, approved", e.jobs(t), e.sentEvents(t), e.approvalState(t, ask.ID))
		}
	})
}
