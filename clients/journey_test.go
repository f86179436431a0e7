package clients_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
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
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The journey: the product's tools with side effects and the reads that go
// with them, called in order by each client as an operator's agent would —
// prepare a reminder draft (and again: the same draft), read the customer
// and the drafts, send the draft (critical tier: a person approves it out of
// band, at a URL), stop contacting the customer (high tier: a person
// confirms in-band), prepare another draft (refused once the customer is
// do_not_contact), link a stored file for the customer (and again: the
// same link), which the test downloads; then send two other customers'
// drafts in one bulk — its mandatory dry run, the real call citing the dry
// run's planHash (critical: approved out of band), and get_bulk_send of the
// bulk the call answered; then the receivables ledger's leg
// (journey_ledger_test.go): an invoice recorded, analyzed, cited by a draft
// that is sent, paid, and not chased again; then the collection schedules' leg
// (journey_schedule_test.go).
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
	jBulkDryRun
	jBulk
	jBulkStatus
	jLedgerRecord
	jLedgerAnalyze
	jLedgerPrepare
	jLedgerPrepareFirm
	jLedgerSend
	jLedgerPay
	jLedgerSendAfter
	jScheduleDryRun
	jSchedule
	jSchedulePreview
	jSchedulePause
	jScheduleGet
	jSteps
)

// criticalSteps are the journey's critical steps, in order: the k-th URL
// elicitation a client is shown is the k-th one's approval.
var criticalSteps = []int{jSend, jBulk, jLedgerSend}

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
	var bulkIDs []string
	for _, d := range s.bulkDrafts {
		bulkIDs = append(bulkIDs, d.ID)
	}
	steps[jBulkDryRun] = journeyStep{Tool: collections.BulkSendName, Args: jsonOf(t, map[string]any{"draftIds": bulkIDs, "dryRun": true})}
	steps[jBulk] = journeyStep{Tool: collections.BulkSendName, Critical: true, Answer: &journeyAnswer{Action: "accept"},
		Args: jsonOf(t, map[string]any{"draftIds": bulkIDs, "idempotencyKey": "journey-bulk"}),
		From: map[string]journeyFrom{"planHash": {Step: jBulkDryRun, Field: "planHash"}}}
	steps[jBulkStatus] = journeyStep{Tool: collections.GetBulkSendName, Args: jsonOf(t, map[string]any{}),
		From: map[string]journeyFrom{"bulkId": {Step: jBulk, Field: "bulkId"}}}
	ledgerSteps(t, steps)
	s.scheduleSteps(t, steps)
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

// bulkCustomers are the customers whose reminders the journey sends in one
// bulk.
var bulkCustomers = []customers.Record{
	{ID: "c-3", Name: "Carla Comércio Ltda", Email: "carla@example.com"},
	{ID: "c-4", Name: "Dora Distribuidora SA", Email: "dora@example.com"},
}

// addFile stores the customer (as `cobranca customers import` would), the
// statement the journey links to (as `cobranca files add` would), and the
// reminder drafts it sends, for sendCustomer and bulkCustomers (as
// prepare_reminder would).
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
		for i, c := range bulkCustomers {
			if _, err := customers.Upsert(ctx, tx, c, time.Now()); err != nil {
				return err
			}
			d, _, err := reminders.Prepare(ctx, tx, tpl, reminders.Request{CustomerID: c.ID,
				To: reminders.Recipient{Name: c.Name, Email: c.Email}, Tone: reminders.Friendly, Language: reminders.PortugueseBR,
				Invoices: []reminders.Invoice{{ID: fmt.Sprintf("inv-b%d", i), DueDate: "2026-10-15", AmountCents: 42000}}, CreatedBy: "alice"}, time.Now())
			if err != nil {
				return err
			}
			s.bulkDrafts = append(s.bulkDrafts, d)
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
	// Left out: the high-tier step by a client that cannot confirm, and
	// get_bulk_send by one the server refused the bulk (the Inspector CLI on
	// 2026-07-28: no bulk id to ask about).
	refusedCritical := revision == modernRevision && !ranHigh
	for i, st := range rep.Journey {
		if st == nil && (i != jStop && i != jLedgerPay && i != jSchedule || ranHigh) && (i != jBulkStatus || !refusedCritical) && (i != jLedgerSendAfter || confirmed) {
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
		if forms := elicitedIn(t, rep.JourneyElicited, "form"); len(forms) == 0 {
			t.Errorf("set_contact_status: no confirmation shown")
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
	s.checkBulk(t, rep, revision, ranHigh)
	s.checkLedgerJourney(t, rep, revision, confirmed, ranHigh, elicitedIn(t, rep.JourneyElicited, "form"))
	s.checkScheduleJourney(t, rep, confirmed, ranHigh)
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

// checkSend holds the journey's critical step, send_reminder: approved as
// checkApproval says, the retry queues the draft, and the SMTP server
// receives it once, with the answer's Message-ID, to the draft's recipient;
// refused, the draft stays a draft.
func (s *compatServer) checkSend(t *testing.T, rep report, revision string, ranHigh bool) {
	t.Helper()
	if !s.checkApproval(t, rep, revision, ranHigh, jSend, "send_reminder") {
		if d, err := reminders.Get(context.Background(), s.db, s.sendDraft.ID); err != nil || d.State != reminders.Draft {
			t.Errorf("the draft after a refused send: %v %v, want still a draft", d.State, err)
		}
		return
	}
	got := fields(t, "send_reminder, approved", rep.Journey[jSend])
	if got == nil {
		return
	}
	if got["draftId"] != s.sendDraft.ID || got["state"] != "queued" || got["to"] != sendCustomer.Email || !strings.HasSuffix(str(got["messageId"]), ".outbox@cobranca.test>") {
		t.Errorf("send_reminder: %v; want draft %s queued to %s with a Message-ID", got, s.sendDraft.ID, sendCustomer.Email)
	}
	msgs := s.received(t, sendCustomer.Email)
	if len(msgs) != 1 || msgs[0].MessageID != got["messageId"] || msgs[0].Subject != s.sendDraft.Subject ||
		outboxtest.Text(msgs[0].Body) != strings.TrimSpace(s.sendDraft.Body) {
		t.Errorf("the SMTP server received %+v; want the draft once, Message-ID %v, to %s", msgs, got["messageId"], sendCustomer.Email)
	}
	s.waitSent(t, s.sendDraft.ID)
}

// checkApproval holds the journey's critical step i (tool) to what the
// client's revision shows of an approval, and reports whether the call went
// ahead. A 2026-07-28 client with an elicitation handler is asked by a URL
// elicitation to the approval at this server — the k-th it is shown, for
// the k-th critical step — which the person opens (approveRoute approves),
// and the client retries by itself; a 2025-11-25 client gets the tool error
// approval_required carrying the URL, which the person opens, and calls
// again. The Inspector CLI on 2026-07-28 shows no URL elicitation and
// declares none: it is refused with the JSON-RPC error -32021 requiring
// elicitation.url (the CLI prints only its message: missing_client_capability,
// url mode), and the call does not go ahead.
func (s *compatServer) checkApproval(t *testing.T, rep report, revision string, ranHigh bool, i int, tool string) bool {
	t.Helper()
	st := rep.Journey[i]
	asked := rep.JourneyApprovals[i]
	prefix := s.base + "/approvals/a_"
	if revision == modernRevision && !ranHigh {
		var data struct {
			RequiredCapabilities struct{ Elicitation *struct{ URL *struct{} } }
		}
		want := "missing_client_capability: this call needs a person's approval at a URL: declare the elicitation capability (url mode)"
		if e := st.Error; e == nil || e.Message != want || e.Code != 0 && e.Code != mcp.CodeMissingRequiredClientCapabilities ||
			e.Data != nil && (json.Unmarshal(e.Data, &data) != nil || data.RequiredCapabilities.Elicitation == nil || data.RequiredCapabilities.Elicitation.URL == nil) {
			t.Errorf("%s from the Inspector CLI on %s: %+v, %s; want the JSON-RPC error %d requiring elicitation.url",
				tool, revision, st.Error, st.Result, mcp.CodeMissingRequiredClientCapabilities)
		}
		if asked != nil || len(s.smtp.Messages()) != 0 {
			t.Errorf("%s refused: approval_required %v, %d messages; want neither", tool, asked, len(s.smtp.Messages()))
		}
		return false
	}
	if revision == modernRevision {
		urls := elicitedIn(t, rep.JourneyElicited, "url")
		k := slices.Index(criticalSteps, i)
		var p struct{ URL, ElicitationID, Message string }
		// (The TypeScript client 2.x hands its handler the params without
		// elicitationId; go-sdk keeps it.)
		if len(urls) != len(criticalSteps) || json.Unmarshal(urls[k], &p) != nil || !strings.HasPrefix(p.URL, prefix) ||
			p.ElicitationID != "" && p.URL != s.base+"/approvals/"+p.ElicitationID || !strings.Contains(p.Message, p.URL) {
			t.Errorf("%s on %s: URL elicitations %s, want one to %s… for each critical step", tool, revision, urls, prefix)
		}
		if asked != nil {
			t.Errorf("%s on %s: answered approval_required %s too", tool, revision, asked.Result)
		}
	} else {
		var d failure.Detail
		if asked == nil {
			t.Errorf("%s on %s: the client was not answered approval_required", tool, revision)
		} else if d = wantToolError(t, tool+", first call", *asked, failure.ApprovalRequired, ""); d.Code != "" && !strings.Contains(d.Message, prefix) {
			t.Errorf("approval_required's message %q carries no URL %s…", d.Message, prefix)
		}
	}
	return true
}

// checkBulk holds the journey's bulk send: the dry run's preview and
// planHash; the real call citing it, approved as checkApproval says, queues
// both drafts under a bulk id; get_bulk_send of that id counts them (queued
// or already sent, none failed); the SMTP server receives each draft once,
// under the Message-ID its draft records, and both end sent.
func (s *compatServer) checkBulk(t *testing.T, rep report, revision string, ranHigh bool) {
	t.Helper()
	dry := fields(t, "bulk_send_reminders, dry run", rep.Journey[jBulkDryRun])
	samples, _ := dry["sampleMessages"].([]any)
	if dry["dryRun"] != true || dry["recipientCount"] != float64(len(s.bulkDrafts)) || len(samples) != len(s.bulkDrafts) ||
		!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(str(dry["planHash"])) {
		t.Errorf("bulk_send_reminders, dry run: %v; want %d recipients, a sample each and a plan hash", dry, len(s.bulkDrafts))
	}
	if !s.checkApproval(t, rep, revision, ranHigh, jBulk, collections.BulkSendName) {
		for _, d := range s.bulkDrafts {
			if now, err := reminders.Get(context.Background(), s.db, d.ID); err != nil || now.State != reminders.Draft {
				t.Errorf("a draft after a refused bulk: %v %v, want still a draft", now.State, err)
			}
		}
		return
	}
	sent := fields(t, "bulk_send_reminders, approved", rep.Journey[jBulk])
	status := fields(t, "get_bulk_send", rep.Journey[jBulkStatus])
	if sent == nil || status == nil {
		return
	}
	bulkID := str(sent["bulkId"])
	if !strings.HasPrefix(bulkID, "b_") || sent["queued"] != float64(len(s.bulkDrafts)) || sent["planHash"] != dry["planHash"] || sent["dryRun"] != false {
		t.Errorf("bulk_send_reminders: %v; want a bulk b_… of %d queued under the dry run's plan", sent, len(s.bulkDrafts))
	}
	if status["bulkId"] != bulkID || status["total"] != float64(len(s.bulkDrafts)) || status["failed"] != 0.0 ||
		status["queued"].(float64)+status["sent"].(float64) != float64(len(s.bulkDrafts)) {
		t.Errorf("get_bulk_send: %v; want bulk %s, %d queued or sent, none failed", status, bulkID, len(s.bulkDrafts))
	}
	for _, d := range s.bulkDrafts {
		msgs := s.received(t, d.To.Email)
		now := s.waitSent(t, d.ID)
		if len(msgs) != 1 || now.Sending == nil || msgs[0].MessageID != now.Sending.MessageID || msgs[0].Subject != d.Subject {
			t.Errorf("the SMTP server received %+v for %s; want its draft once, under the Message-ID the draft records", msgs, d.To.Email)
		}
	}
}

// received returns the messages the SMTP server accepted for to, once
// there is one (failing the test after 30 s).
func (s *compatServer) received(t *testing.T, to string) []smtptest.Message {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var got []smtptest.Message
		for _, m := range s.smtp.Messages() {
			if slices.Equal(m.To, []string{to}) {
				got = append(got, m)
			}
		}
		if len(got) > 0 {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("the SMTP server received nothing for %s", to)
		}
	}
}

// waitSent waits until the draft id is sent and returns it.
func (s *compatServer) waitSent(t *testing.T, id string) reminders.Record {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		d, err := reminders.Get(context.Background(), s.db, id)
		if err != nil {
			t.Fatal(err)
		}
		if d.State == reminders.Sent {
			return d
		}
		if time.Now().After(deadline) {
			t.Fatalf("the draft %s is %s, want sent", id, d.State)
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
