package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/notify"
	"github.com/cobranca/cobranca/internal/smtptest"
)

// TestServeApproversTold: `cobranca serve` with COBRANCA_APPROVER_EMAILS and a webhook tells
// the approvers when an agent's send_reminder waits for approval — an e-mail per approver in
// the outbox and one signed post — in Portuguese unless told otherwise, with the approval's
// link and none of the reminder's customer data.
func TestServeApproversTold(t *testing.T) {
	const key = "webhook-key-webhook-key-webhook-key"
	var mu sync.Mutex
	var posts []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := notify.Verify([]byte(key), r.Header.Get(notify.TimestampHeader), r.Header.Get(notify.SignatureHeader), body, time.Now(), time.Minute); err != nil {
			t.Errorf("webhook post: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		mu.Lock()
		posts = append(posts, string(body))
		mu.Unlock()
	}))
	defer hook.Close()
	dir := t.TempDir()
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=off",
		"COBRANCA_APPROVER_EMAILS=ana@financeiro.test,rui@financeiro.test",
		"COBRANCA_APPROVAL_WEBHOOK_URL=" + hook.URL + "/hooks/T0/B0/secretpath", "COBRANCA_APPROVAL_WEBHOOK_SECRET=" + key}
	mustRun(t, environ, "migrate")
	_, stop := startServe(t, environ...)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	agent := strings.TrimSpace(mustRun(t, environ, "token", "--sub", "alice", "--scope", "reminders:write reminders:send collections:read", "--agent", "ledger-copilot"))
	a := connectAgent(t, addr, agent)
	draft := a.fields("prepare_reminder", a.call(collections.PrepareReminderName, map[string]any{
		"customer": map[string]any{"id": "c-77", "name": "Padaria Pão Quente", "email": "padaria@cliente.example"},
		"invoices": []any{map[string]any{"id": "NF-000042", "dueDate": "2026-11-01", "amountCents": 987654}},
		"tone":     "friendly", "idempotencyKey": "prepare-1",
	}))["draftId"].(string)
	res := a.call(collections.SendReminderName, map[string]any{"draftId": draft, "idempotencyKey": "send-1"})
	var detail failure.Detail
	raw, _ := json.Marshal(res.Meta[mcpapi.ErrorMetaKey])
	if err := json.Unmarshal(raw, &detail); err != nil || detail.Code != failure.ApprovalRequired {
		t.Fatalf("send_reminder = %+v, want approval_required", res)
	}
	id := regexp.MustCompile(`a_[a-z2-7]{26}`).FindString(detail.Message)
	link := "http://" + addr + "/approvals/" + id

	customer := []string{"Padaria", "Quente", "padaria@cliente.example", "NF-000042", "9.876,54", "987654", "c-77", draft}
	var mails []string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mails = mails[:0]
		files, _ := filepath.Glob(filepath.Join(dir, "outbox", "*.eml"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			m, err := smtptest.Parse(b)
			if err != nil {
				continue // being written
			}
			mails = append(mails, string(b)+"\n"+m.Subject+"\n"+m.Body)
		}
		mu.Lock()
		n := len(posts)
		mu.Unlock()
		if len(mails) >= 2 && n >= 1 || time.Now().After(deadline) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(mails) != 2 || len(posts) != 1 {
		t.Fatalf("%d e-mails and %d posts, want 2 and 1", len(mails), len(posts))
	}
	for _, m := range append(mails, posts...) {
		if !strings.Contains(m, link) || !strings.Contains(m, collections.SendReminderName) || !strings.Contains(m, "alice") || !strings.Contains(m, "Aprovar ou rejeitar") {
			t.Errorf("notification %.400q: want the link %s, the tool and the requester, in Portuguese", m, link)
		}
		for _, c := range customer {
			if strings.Contains(m, c) {
				t.Errorf("notification holds the customer's %q:\n%s", c, m)
			}
		}
	}
	for _, to := range []string{"ana@financeiro.test", "rui@financeiro.test"} {
		if !strings.Contains(strings.Join(mails, "\n"), "To: <"+to+">") {
			t.Errorf("no e-mail to %s among:\n%s", to, strings.Join(mails, "\n---\n"))
		}
	}
}

// TestServeRefusesNotifyLanguage: a language notifications are not written in stops serve,
// naming the variable, before it opens anything.
func TestServeRefusesNotifyLanguage(t *testing.T) {
	dir := t.TempDir()
	err := run(t.Context(), []string{"serve"}, []string{"COBRANCA_DATA_DIR=" + dir, "COBRANCA_ADDR=127.0.0.1:0", "COBRANCA_NOTIFY_LANGUAGE=es"}, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "COBRANCA_NOTIFY_LANGUAGE: must be pt-BR or en") {
		t.Errorf("serve with COBRANCA_NOTIFY_LANGUAGE=es = %v, want a refusal naming it", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("serve wrote %d files in the data directory before refusing", len(entries))
	}
}
