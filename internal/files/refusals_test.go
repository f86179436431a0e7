package files_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/limits"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestDownloadRefusalsAudited (issue 25): a forged download link — its signature altered, or
// its expiry moved — is audited as a refused download, and so is a link of this server past
// its expiry (naming it): counted per client, one event per class a minute, so that a flood of
// forged links is one event, not one each; nothing of the URL is kept.
func TestDownloadRefusalsAudited(t *testing.T) {
	db := storetest.SQLite(t)
	alog, digest := pipelinetest.AuditLog(t, db)
	refusals, err := auditlog.NewRefusals(auditlog.RefusalsOptions{Write: alog.Keep, Digest: digest,
		Client: func(r *http.Request) string { return limits.ClientIP(r, "") }})
	if err != nil {
		t.Fatal(err)
	}
	links, err := files.NewLinks(ring(t), "https://files.example.com")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(files.DownloadPattern, &files.Downloads{DB: db, Links: links, Audit: alog, Refusals: refusals,
		Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 }})
	old := files.Link{ID: ident.New("l_"), FileID: ident.New("f_"), ExpiresAt: t0.Add(-time.Hour)}
	live := links.URL(files.Link{ID: ident.New("l_"), FileID: ident.New("f_"), ExpiresAt: t0.Add(time.Hour)})
	with := func(raw, param, value string) string {
		u, _ := url.Parse(raw)
		q := u.Query()
		q.Set(param, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	get := func(u string, code failure.Code) {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, u, nil))
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `"code":"`+string(code)+`"`) {
			t.Fatalf("GET %s = %d %s, want 403 %s", u, rec.Code, rec.Body, code)
		}
	}
	for range 10 {
		get(with(live, "sig", strings.Repeat("A", 43)), files.CodeLinkSignature)
	}
	get(with(live, "exp", "4102444800"), files.CodeLinkSignature)
	get(links.URL(old), files.CodeLinkExpired)
	if got := outcomes(t, db, files.DownloadEvent); len(got) != 0 {
		t.Fatalf("events before the minute's write: %v, want the refusals counted first", got)
	}
	refusals.Flush(t.Context())
	want := `denied link_signature_invalid {"count":11},denied link_expired {"count":1}`
	if got := outcomes(t, db, files.DownloadEvent); strings.Join(got, ",") != want {
		t.Errorf("download refusals audited %v, want %s", got, want)
	}
	var tools []string
	rows, err := db.Query(t.Context(), `SELECT tool FROM audit_event WHERE event = $1 ORDER BY id`, files.DownloadEvent)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var tool string
		if err := rows.Scan(&tool); err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	if want := []string{"", files.Object(old.FileID, old.ID)}; strings.Join(tools, ",") != strings.Join(want, ",") {
		t.Errorf("events name %q, want %q: nothing for a forged link, the link for one of this server", tools, want)
	}
}
