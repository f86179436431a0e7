package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The journey: the product's tools with side effects and the reads that go
// with them, called in order by each client as an operator's agent would —
// prepare a reminder draft (and again: the same draft), read the customer
// and the drafts, send the draft (critical tier: a person approves it out of
// band, at a URL), stop contacting the customer (high tier: a person
// confirms in-band), prepare another draft (refused once the customer is
// do_not_contact), then link a stored file for the customer (and again: the
// same link), which the test downloads.
const (
	jPrepare = iota
	jPrepareAgain
	jCustomer
	jDrafts
	jSend
	jStop
	jPrepareBlocked
	jLink
	jLinkAgain
	jSteps
)

// journeyCustomer is the customer the journey works on. Its name is data a
// template or a page must never interpret.
const (
	journeyCustomerID   = "c-1"
	journeyCustomerName = `Ana {{.Secret}} <b>Ltda</b>`
)

// journeyStep is one step as the client scripts read it (lib.mjs).
type journeyStep struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Answer *journeyAnswer  `json:"answer,omitempty"`
	High   bool            `json:"high,omitempty"`
	// Critical: a person approves the step out of band, at the URL the
	// client is given (a URL elicitation, or approval_required's message).
	Critical bool `json:"critical,omitempty"`
	// From fills arguments from the results of earlier steps, by argument
	// name (lib.mjs's journeyArgs).
	From map[string]journeyFrom `json:"from,omitempty"`
}

// journeyFrom names a field of an earlier step's structured result.
type journeyFrom struct {
	Step  int    `json:"step"`
	Field string `json:"field"`
}

// args are the step's arguments, as JSON, with From filled from done, the
// steps run before it; false when one of them has no such field (the step
// is then not run), as lib.mjs's journeyArgs.
func (st journeyStep) args(t *testing.T, done []*step) (string, bool) {
	t.Helper()
	if len(st.From) == 0 {
		return string(st.Args), true
	}
	var args map[string]any
	if err := json.Unmarshal(st.Args, &args); err != nil {
		t.Fatal(err)
	}
	for name, f := range st.From {
		var r struct{ StructuredContent map[string]any }
		if f.Step >= len(done) || done[f.Step] == nil || json.Unmarshal(done[f.Step].Result, &r) != nil || r.StructuredContent[f.Field] == nil {
			return "", false
		}
		args[name] = r.StructuredContent[f.Field]
	}
	return string(jsonOf(t, args)), true
}

// journeyAnswer is a person's reply to a confirmation: an elicitation
// result.
type journeyAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// journeySteps returns the journey for s, as JSON: its file, and an expiry
// two days from now.
func (s *compatServer) journeySteps(t *testing.T) string {
	t.Helper()
	customer := map[string]any{"id": journeyCustomerID, "name": journeyCustomerName, "email": "ana@example.com"}
	invoices := []map[string]any{
		{"id": "inv-1", "dueDate": "2026-11-01", "amountCents": 150000},
		{"id": "inv-2", "dueDate": "2026-11-10", "amountCents": 60000},
	}
	prepare := map[string]any{"customer": customer, "invoices": invoices, "tone": "friendly", "idempotencyKey": "journey-1"}
	prepareAgain := map[string]any{"customer": customer, "invoices": invoices, "tone": "friendly", "idempotencyKey": "journey-2"}
	blocked := map[string]any{"customer": customer, "invoices": invoices[:1], "tone": "firm", "language": "en", "idempotencyKey": "journey-4"}
	expires := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	link := map[string]any{"fileId": s.fileID, "expiresAt": expires}
	steps := make([]journeyStep, jSteps)
	steps[jPrepare] = journeyStep{Tool: "collections.prepare_reminder", Args: jsonOf(t, prepare)}
	steps[jPrepareAgain] = journeyStep{Tool: "collections.prepare_reminder", Args: jsonOf(t, prepareAgain)}
	steps[jCustomer] = journeyStep{Tool: "collections.get_customer", Args: jsonOf(t, map[string]any{"customerId": journeyCustomerID})}
	steps[jDrafts] = journeyStep{Tool: "collections.list_drafts", Args: jsonOf(t, map[string]any{"customerId": journeyCustomerID})}
	// The draft addFile wrote for another customer: the journey's own
	// customer goes on to do_not_contact, which discards its drafts.
	steps[jSend] = journeyStep{Tool: collections.SendReminderName, Critical: true, Answer: &journeyAnswer{Action: "accept"},
		Args: jsonOf(t, map[string]any{"draftId": s.sendDraft.ID, "idempotencyKey": "journey-send"})}
	steps[jStop] = journeyStep{Tool: "collections.set_contact_status", High: true,
		Args: jsonOf(t, map[string]any{"customerId": journeyCustomerID, "status": "do_not_contact",
			"reason": "Asked by phone not to be contacted", "idempotencyKey": "journey-3"}),
		Answer: &journeyAnswer{Action: "accept", Content: map[string]any{"confirm": true}}}
	steps[jPrepareBlocked] = journeyStep{Tool: "collections.prepare_reminder", Args: jsonOf(t, blocked)}
	steps[jLink] = journeyStep{Tool: "files.create_download_link", Args: jsonOf(t, link)}
	steps[jLinkAgain] = journeyStep{Tool: "files.create_download_link", Args: jsonOf(t, link)}
	return string(jsonOf(t, steps))
}

func jsonOf(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sendCustomer is the customer whose reminder the journey sends: not the
// journey's own, which it stops contacting.
var sendCustomer = customers.Record{ID: "c-2", Name: `Bruno {{.Secret}} <i>SA</i>`, Email: "bruno@example.com"}

// addFile stores the customer (as `cobranca customers import` would), the
// statement the journey links to (as `cobranca files add` would), and the
// reminder draft it sends, for sendCustomer (as prepare_reminder would).
func (s *compatServer) addFile(t *testing.T) {
	t.Helper()
	s.fileContent = []byte("%PDF-1.4\n% a statement for " + journeyCustomerID + "\n")
	tpl, err := reminders.ParseTemplates()
	if err != nil {
		t.Fatal(err)
	}
	err = s.db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		if _, err := customers.Upsert(ctx, tx, customers.Record{ID: journeyCustomerID, Name: journeyCustomerName, Email: "ana@example.com"}, time.Now()); err != nil {
			return err
		}
		if _, err := customers.Upsert(ctx, tx, sendCustomer, time.Now()); err != nil {
			return err
		}
		s.sendDraft, _, err = reminders.Prepare(ctx, tx, tpl, reminders.Request{CustomerID: sendCustomer.ID,
			To: reminders.Recipient{Name: sendCustomer.Name, Email: sendCustomer.Email}, Tone: reminders.Firm, Language: reminders.English,
			Invoices: []reminders.Invoice{{ID: "inv-9", DueDate: "2026-10-01", AmountCents: 99000}}, CreatedBy: "alice"}, time.Now())
		if err != nil {
			return err
		}
		f, err := files.Add(ctx, tx, files.Upload{Name: "statement-2026-11.pdf", Content: s.fileContent,
			CustomerID: journeyCustomerID, CreatedBy: "operator"}, 1<<20, time.Now())
		s.fileID = f.ID
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkJourney holds what a client made of the journey. confirmed: the
// client showed the person the confirmation of the high-tier step, who
// accepted (a 2026-07-28 client with an elicitation handler); ranHigh: the
// client ran the high-tier step at all (not the Inspector CLI). On
// 2025-11-25 that step is the tool error confirmation_required and the
// customer stays contactable.
func (s *compatServer) checkJourney(t *testing.T, rep report, revision string, confirmed, ranHigh bool) {
	t.Helper()
	if len(rep.Journey) != jSteps {
		t.Fatalf("journey: %d steps reported, want %d", len(rep.Journey), jSteps)
	}
	for i, st := range rep.Journey {
		if st == nil && (i != jStop || ranHigh) {
			t.Fatalf("journey step %d: not run", i)
		}
	}

	// A draft, then the same draft again under another key.
	first := fields(t, "prepare_reminder", rep.Journey[jPrepare])
	draftID, _ := first["draftId"].(string)
	if !strings.HasPrefix(draftID, "d_") || first["created"] != true || first["state"] != "draft" ||
		!strings.Contains(str(first["preview"]), journeyCustomerName) {
		t.Errorf("prepare_reminder: %v; want a new draft d_… whose preview shows the name %q as written", first, journeyCustomerName)
	}
	again := fields(t, "prepare_reminder again", rep.Journey[jPrepareAgain])
	if again["draftId"] != draftID || again["created"] != false || again["subject"] != first["subject"] {
		t.Errorf("prepare_reminder with the same customer, invoices and tone: %v; want the draft %s again, created false", again, draftID)
	}

	// The reads see the customer, contactable, and its one draft, by id
	// and subject, no body.
	customer := fields(t, "get_customer", rep.Journey[jCustomer])
	status, _ := customer["contactStatus"].(map[string]any)
	wantRef := []any{map[string]any{"draftId": draftID, "subject": first["subject"]}}
	if customer["name"] != journeyCustomerName || status["status"] != "contactable" || !jsonEqual(t, customer["openDrafts"], wantRef) {
		t.Errorf("get_customer: %v; want %q, contactable, open drafts %v", customer, journeyCustomerName, wantRef)
	}
	drafts := fields(t, "list_drafts", rep.Journey[jDrafts])
	items, _ := drafts["drafts"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["id"] != draftID || items[0].(map[string]any)["body"] != nil {
		t.Errorf("list_drafts: %v; want the one draft %s, without its body", drafts, draftID)
	}

	// Stop contacting the customer: only a person's confirmation does it.
	switch {
	case confirmed:
		got := fields(t, "set_contact_status", rep.Journey[jStop])
		want := map[string]any{"customerId": journeyCustomerID, "previousStatus": "contactable", "status": "do_not_contact",
			"changed": true, "draftsDiscarded": float64(1)}
		if !jsonEqual(t, got, want) {
			t.Errorf("set_contact_status, confirmed: %v, want %v", got, want)
		}
		if forms := elicitedIn(t, rep.JourneyElicited, "form"); len(forms) != 1 {
			t.Errorf("set_contact_status: %d confirmations shown, want 1", len(forms))
		} else {
			var p struct{ Message string }
			_ = json.Unmarshal(forms[0], &p)
			for _, part := range []string{journeyCustomerName, "contactable", "do_not_contact", "Asked by phone not to be contacted"} {
				if !strings.Contains(p.Message, part) {
					t.Errorf("set_contact_status: the confirmation %q does not show %q", p.Message, part)
				}
			}
		}
	case ranHigh:
		wantToolError(t, "set_contact_status on 2025-11-25", *rep.Journey[jStop], failure.ConfirmationRequired, "")
	}
	if !confirmed && len(rep.JourneyElicited) != 0 {
		t.Errorf("journey: %d elicitations shown, want none", len(rep.JourneyElicited))
	}
	s.checkSend(t, rep, revision, ranHigh)
	c, err := customers.Get(context.Background(), s.db, journeyCustomerID)
	if err != nil {
		t.Fatal(err)
	}
	wantStatus := customers.Contactable
	if confirmed {
		wantStatus = customers.DoNotContact
	}
	if c.Status != wantStatus {
		t.Errorf("the customer's status is %s after the journey, want %s", c.Status, wantStatus)
	}

	// Another draft: refused once the customer is do_not_contact.
	if confirmed {
		wantToolError(t, "prepare_reminder after do_not_contact", *rep.Journey[jPrepareBlocked], customers.CodeDoNotContact, "customer.id")
	} else if got := fields(t, "prepare_reminder, firm, en", rep.Journey[jPrepareBlocked]); got["created"] != true || got["draftId"] == draftID {
		t.Errorf("prepare_reminder with another invoice set and tone: %v, want a new draft", got)
	}

	// A link to the statement, the same link again; the URL downloads it.
	link := fields(t, "create_download_link", rep.Journey[jLink])
	url := str(link["url"])
	if !strings.HasPrefix(str(link["linkId"]), "l_") || link["created"] != true || !strings.HasPrefix(url, s.base+"/files/"+s.fileID+"/download?") {
		t.Errorf("create_download_link: %v; want a new link l_… to %s/files/%s/download", link, s.base, s.fileID)
	}
	linkAgain := fields(t, "create_download_link again", rep.Journey[jLinkAgain])
	if linkAgain["linkId"] != link["linkId"] || linkAgain["url"] != url || linkAgain["created"] != false {
		t.Errorf("create_download_link with the same file and expiry: %v; want the link %v again, created false", linkAgain, link["linkId"])
	}
	if url != "" {
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || !bytes.Equal(body, s.fileContent) {
			t.Errorf("GET the link: %d, %q; want 200 and the file", res.StatusCode, body)
		}
	}
}

// checkSend holds the journey's critical step, send_reminder, to what the
// client's revision shows of an approval. A 2026-07-28 client with an
// elicitation handler is asked by a URL elicitation to the approval at
// this server, which the person opens (approveRoute approves), and the
// client retries by itself; a 2025-11-25 client gets the tool error
// approval_required carrying the URL, which the person opens, and calls
// again. Either way the retry queues the draft, and the SMTP server receives
// it once, with the answer's Message-ID, to the draft's recipient. The
// Inspector CLI on 2026-07-28 shows no URL elicitation and declares none: it
// is refused with the JSON-RPC error -32021 requiring elicitation.url (the
// CLI prints only its message: missing_client_capability, url mode), and
// nothing is sent.
func (s *compatServer) checkSend(t *testing.T, rep report, revision string, ranHigh bool) {
	t.Helper()
	st := rep.Journey[jSend]
	prefix := s.base + "/approvals/a_"
	if revision == modernRevision && !ranHigh {
		var data struct {
			RequiredCapabilities struct{ Elicitation *struct{ URL *struct{} } }
		}
		want := "missing_client_capability: this call needs a person's approval at a URL: declare the elicitation capability (url mode)"
		if e := st.Error; e == nil || e.Message != want || e.Code != 0 && e.Code != mcp.CodeMissingRequiredClientCapabilities ||
			e.Data != nil && (json.Unmarshal(e.Data, &data) != nil || data.RequiredCapabilities.Elicitation == nil || data.RequiredCapabilities.Elicitation.URL == nil) {
			t.Errorf("send_reminder from the Inspector CLI on %s: %+v, %s; want the JSON-RPC error %d requiring elicitation.url",
				revision, st.Error, st.Result, mcp.CodeMissingRequiredClientCapabilities)
		}
		if rep.JourneyApprovals[jSend] != nil || len(s.smtp.Messages()) != 0 {
			t.Errorf("send_reminder refused: approval_required %v, %d messages; want neither", rep.JourneyApprovals[jSend], len(s.smtp.Messages()))
		}
		if d, err := reminders.Get(context.Background(), s.db, s.sendDraft.ID); err != nil || d.State != reminders.Draft {
			t.Errorf("the draft after a refused send: %v %v, want still a draft", d.State, err)
		}
		return
	}
	if revision == modernRevision {
		urls := elicitedIn(t, rep.JourneyElicited, "url")
		var p struct{ URL, ElicitationID, Message string }
		// (The TypeScript client 2.x hands its handler the params without
		// elicitationId; go-sdk keeps it.)
		if len(urls) != 1 || json.Unmarshal(urls[0], &p) != nil || !strings.HasPrefix(p.URL, prefix) ||
			p.ElicitationID != "" && p.URL != s.base+"/approvals/"+p.ElicitationID || !strings.Contains(p.Message, p.URL) {
			t.Errorf("send_reminder on %s: URL elicitations %s, want one to %s…", revision, urls, prefix)
		}
		if rep.JourneyApprovals[jSend] != nil {
			t.Errorf("send_reminder on %s: answered approval_required %s too", revision, rep.JourneyApprovals[jSend].Result)
		}
	} else {
		var d failure.Detail
		if rep.JourneyApprovals[jSend] == nil {
			t.Errorf("send_reminder on %s: the client was not answered approval_required", revision)
		} else if d = wantToolError(t, "send_reminder, first call", *rep.JourneyApprovals[jSend], failure.ApprovalRequired, ""); d.Code != "" && !strings.Contains(d.Message, prefix) {
			t.Errorf("approval_required's message %q carries no URL %s…", d.Message, prefix)
		}
	}
	got := fields(t, "send_reminder, approved", st)
	if got == nil {
		return
	}
	if got["draftId"] != s.sendDraft.ID || got["state"] != "queued" || got["to"] != sendCustomer.Email || !strings.HasSuffix(str(got["messageId"]), ".outbox@cobranca.test>") {
		t.Errorf("send_reminder: %v; want draft %s queued to %s with a Message-ID", got, s.sendDraft.ID, sendCustomer.Email)
	}
	msgs := s.smtp.Wait(t, 1, 30*time.Second)
	if len(msgs) != 1 || msgs[0].MessageID != got["messageId"] || !slices.Equal(msgs[0].To, []string{sendCustomer.Email}) || msgs[0].Subject != s.sendDraft.Subject ||
		outboxtest.Text(msgs[0].Body) != strings.TrimSpace(s.sendDraft.Body) {
		t.Errorf("the SMTP server received %+v; want the draft once, Message-ID %v, to %s", msgs, got["messageId"], sendCustomer.Email)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := reminders.Get(context.Background(), s.db, s.sendDraft.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State == reminders.Sent {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sent draft is %s, want sent", d.State)
		}
	}
}

// elicitedIn are the elicitations in shown of mode ("form" also when no
// mode is given).
func elicitedIn(t *testing.T, shown []json.RawMessage, mode string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	for _, raw := range shown {
		var p struct{ Mode string }
		if err := json.Unmarshal(raw, &p); err != nil {
			t.Fatal(err)
		}
		if p.Mode == mode || p.Mode == "" && mode == "form" {
			out = append(out, raw)
		}
	}
	return out
}

// fields returns the structured content of a step the client accepted as
// a complete result.
func fields(t *testing.T, what string, st *step) map[string]any {
	t.Helper()
	var r callResult
	if err := result(*st, &r); err != nil {
		t.Errorf("%s: %v", what, err)
		return nil
	}
	var m map[string]any
	if r.IsError || json.Unmarshal(r.StructuredContent, &m) != nil {
		t.Errorf("%s: isError %v, meta %s, structuredContent %s; want a result", what, r.IsError, r.Meta, r.StructuredContent)
		return nil
	}
	return m
}

func str(v any) string { s, _ := v.(string); return s }

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	return bytes.Equal(jsonOf(t, a), jsonOf(t, b))
}
