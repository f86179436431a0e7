package files_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// clock is a settable clock shared by the pipeline and the download handler.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time)         { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }
func (c *clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// linkEnv is one store with the tool served by a pipeline and downloads
// served over real HTTP, on one clock.
type linkEnv struct {
	db    store.DB
	clock *clock
	pipe  *pipeline.Pipeline
	srv   *httptest.Server
	links *files.Links
}

var oldKey = reqstate.Key{ID: "old", Secret: bytes.Repeat([]byte{7}, 32)}
var newKey = reqstate.Key{ID: "new", Secret: bytes.Repeat([]byte{9}, 32)}

// newLinkEnv serves links signed under keys (the first signs).
func newLinkEnv(t *testing.T, db store.DB, keys ...reqstate.Key) *linkEnv {
	t.Helper()
	return newLinkEnvWith(t, db, nil, keys...)
}

// newLinkEnvWith is newLinkEnv whose download server and handler are set up
// by configure (when not nil) before the server starts.
func newLinkEnvWith(t *testing.T, db store.DB, configure func(*httptest.Server, *files.Downloads), keys ...reqstate.Key) *linkEnv {
	t.Helper()
	e := &linkEnv{db: db, clock: &clock{t: t0}}
	key := bytes.Repeat([]byte{3}, 32)
	alog, err := auditlog.New(db, key, auditlog.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	digest, err := auditlog.NewDigester(key)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	e.srv = httptest.NewUnstartedServer(mux)
	downloads := &files.Downloads{DB: db, Audit: alog, Logger: slog.New(slog.DiscardHandler), Now: e.clock.Now}
	if configure != nil {
		configure(e.srv, downloads)
	}
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	e.links, err = files.NewLinks(ring(t, keys...), e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	downloads.Links = e.links
	mux.Handle(files.DownloadPattern, downloads)
	ids, err := idempotency.New(db.Dialect(), time.Hour, e.clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := files.Tools(e.links)
	if err != nil {
		t.Fatal(err)
	}
	e.pipe, err = pipeline.New(pipeline.Options{Tools: tools, Auditor: pipeline.NewAuditor(alog, digest), DB: db, Keys: ids, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

type linkAnswer struct {
	LinkID    string `json:"linkId"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
	Created   bool   `json:"created"`
}

var agent = &auth.Principal{Subject: "alice", Actor: "ledger-copilot", Scopes: []string{"files:share"}}

func (e *linkEnv) call(t *testing.T, args string) (linkAnswer, pipeline.Result) {
	t.Helper()
	res := e.pipe.Do(context.Background(), pipeline.Call{Principal: agent, RequestID: "r1", Tool: files.CreateLinkName, Args: json.RawMessage(args)})
	var a linkAnswer
	if res.Kind == pipeline.Complete {
		if err := json.Unmarshal(res.Structured, &a); err != nil {
			t.Fatal(err)
		}
	}
	return a, res
}

func (e *linkEnv) create(t *testing.T, fileID string, exp time.Time) linkAnswer {
	t.Helper()
	a, res := e.call(t, `{"fileId":"`+fileID+`","expiresAt":"`+exp.Format(time.RFC3339)+`"}`)
	if res.Kind != pipeline.Complete {
		t.Fatalf("create_download_link(%s, %s): kind %d, %v", fileID, exp, res.Kind, res.Err)
	}
	return a
}

// get fetches u over HTTP: status, body, headers.
func get(t *testing.T, method, u string) (int, []byte, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b, resp.Header
}

// wantRefused checks that u is a 403 with code, and nothing of the file.
func wantRefused(t *testing.T, u string, code failure.Code) {
	t.Helper()
	status, body, h := get(t, http.MethodGet, u)
	var got failure.Body
	if err := json.Unmarshal(body, &got); status != http.StatusForbidden || err != nil || got.Error.Code != code || h.Get("Content-Disposition") != "" {
		t.Errorf("GET %s = %d %.200q, want 403 %s", redact(u), status, body, code)
	}
}

// redact keeps a test's failure message free of the credential.
func redact(u string) string {
	p, _ := url.Parse(u)
	return p.Path
}

// outcomes are the outcome, failure code and details of each event named
// event, in order: "allowed", "denied link_expired", "allowed {"headRequest": 1}".
func outcomes(t *testing.T, db store.DB, event string) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT outcome, failure_code, details FROM audit_event WHERE event = $1 ORDER BY id`, event)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o, c, d string
		if err := rows.Scan(&o, &c, &d); err != nil {
			t.Fatal(err)
		}
		var details map[string]int64
		if err := json.Unmarshal([]byte(d), &details); err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSuffix(o+" "+c, " ")
		if len(details) > 0 {
			b, _ := json.Marshal(details)
			line += " " + string(b)
		}
		out = append(out, line)
	}
	return out
}

// TestSeedIdempotency is seed 000's example: the first call creates a link;
// the same parameters while it is valid return the same link and record no
// row (audited unchanged); once it expired, a call for the same file makes
// a new link and the old URL is refused link_expired; after a revoke, the
// same (fileId, expiresAt) gives a new link and the old URL link_revoked.
func TestSeedIdempotency(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newLinkEnv(t, db, newKey)
		content := append([]byte("%PDF-1.7\n"), randomBytes(2*1024*1024+5)...)
		customer(t, db, "C-1")
		f := add(t, db, files.Upload{Name: "Boleto março.pdf", Content: content, CustomerID: "C-1", CreatedBy: "ana"})
		exp := t0.Add(7*24*time.Hour - time.Minute)

		first := e.create(t, f.ID, exp)
		if !first.Created || !files.ValidLinkID(first.LinkID) || first.ExpiresAt != exp.Format(time.RFC3339) || !strings.HasPrefix(first.URL, e.srv.URL+"/files/"+f.ID+"/download?") {
			t.Fatalf("first call = %+v, want a new link", first)
		}
		// The same instant, written with an offset, and later.
		e.clock.Advance(time.Hour)
		second := e.create(t, f.ID, exp.In(time.FixedZone("BRT", -3*3600)))
		if second.Created || second.LinkID != first.LinkID || second.URL != first.URL || second.ExpiresAt != first.ExpiresAt {
			t.Errorf("second call = %+v, want the first link (%s), not created", second, first.LinkID)
		}
		if n := countLinks(t, db); n != 1 {
			t.Errorf("%d links after two calls, want 1", n)
		}
		if got := pipelinetest.Audited(t, db, files.CreateLinkName); !maps.Equal(got, map[string]int{"allowed": 1, "unchanged": 1}) {
			t.Errorf("audit outcomes %v, want one allowed, one unchanged", got)
		}
		l, err := files.GetLink(context.Background(), db, first.LinkID)
		if err != nil || l.CreatedBy != "alice" || l.CreatedByActor != "ledger-copilot" || !l.CreatedAt.Equal(t0) {
			t.Errorf("link row = %+v, %v", l, err)
		}

		// A good URL downloads the exact bytes.
		status, body, h := get(t, http.MethodGet, first.URL)
		if status != http.StatusOK || sha256.Sum256(body) != f.SHA256 {
			t.Fatalf("GET good URL = %d, %d bytes (digest differs: %t)", status, len(body), sha256.Sum256(body) != f.SHA256)
		}
		for k, want := range map[string]string{
			"Content-Type":           "application/pdf",
			"Content-Length":         "2097166",
			"Content-Disposition":    `attachment; filename="Boleto mar_o.pdf"; filename*=UTF-8''Boleto%20mar%C3%A7o.pdf`,
			"X-Content-Type-Options": "nosniff",
			"Cache-Control":          "private, no-store",
		} {
			if got := h.Get(k); got != want {
				t.Errorf("download %s = %q, want %q", k, got, want)
			}
		}
		status, body, h = get(t, http.MethodHead, first.URL)
		if status != http.StatusOK || len(body) != 0 || h.Get("Content-Length") != "2097166" {
			t.Errorf("HEAD = %d, %d bytes, length %s", status, len(body), h.Get("Content-Length"))
		}
		status, _, h = get(t, http.MethodPost, first.URL)
		if status != http.StatusMethodNotAllowed || h.Get("Allow") != "GET, HEAD" {
			t.Errorf("POST = %d (Allow %q), want 405", status, h.Get("Allow"))
		}

		// Past its expiry: the old URL is refused; the same arguments are
		// refused, their expiresAt now in the past; a call naming a new
		// expiresAt makes a new link.
		e.clock.Set(exp)
		wantRefused(t, first.URL, files.CodeLinkExpired)
		if _, res := e.call(t, `{"fileId":"`+f.ID+`","expiresAt":"`+exp.Format(time.RFC3339)+`"}`); res.Kind != pipeline.ToolError ||
			res.Err.Code != failure.InvalidArguments || res.Err.Field != "expiresAt" || res.Err.Message != "must be in the future" {
			t.Errorf("the first call's arguments after expiry = kind %d %v, want invalid_arguments: expiresAt: must be in the future", res.Kind, res.Err)
		}
		exp3 := exp.Add(24 * time.Hour)
		third := e.create(t, f.ID, exp3)
		if !third.Created || third.LinkID == first.LinkID {
			t.Errorf("call after expiry = %+v, want a new link", third)
		}

		// Revoked: the URL is refused, the same (fileId, expiresAt) makes a new link.
		err = db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
			_, err := files.Revoke(ctx, tx, third.LinkID, "ops", e.clock.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		wantRefused(t, third.URL, files.CodeLinkRevoked)
		fourth := e.create(t, f.ID, exp3)
		if !fourth.Created || fourth.LinkID == third.LinkID || fourth.URL == third.URL {
			t.Errorf("call after revoke = %+v, want a new link", fourth)
		}
		if status, body, _ := get(t, http.MethodGet, fourth.URL); status != http.StatusOK || sha256.Sum256(body) != f.SHA256 {
			t.Errorf("GET new link = %d", status)
		}
		want := `allowed,allowed {"headRequest":1},denied link_expired,denied link_revoked,allowed` // GET, HEAD; POST is refused before any check
		if got := outcomes(t, db, files.DownloadEvent); strings.Join(got, ",") != want {
			t.Errorf("download audit outcomes %v, want %s", got, want)
		}
		// The audit log holds ids, never the URL or its signature.
		rows, err := db.Query(context.Background(), `SELECT tool, subject FROM audit_event WHERE event = $1`, files.DownloadEvent)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var tool, subject string
			if err := rows.Scan(&tool, &subject); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tool, "file:"+f.ID+" link:l_") || strings.Contains(tool, "sig") || subject != "" {
				t.Errorf("download event names %q, %q", tool, subject)
			}
		}
	})
}

// TestKeyedCallStoresNoURL: a keyed call's answer, which holds the signed
// URL, is not kept under its idempotencyKey; a repeat of the key answers
// the same link from the natural idempotency (audited unchanged).
func TestKeyedCallStoresNoURL(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newLinkEnv(t, db, newKey)
		f := add(t, db, files.Upload{Name: "a.pdf", Content: []byte("%PDF-1.4"), CreatedBy: "ana"})
		args := `{"fileId":"` + f.ID + `","expiresAt":"2025-12-25T09:30:00Z","idempotencyKey":"link-1"}`
		first, res := e.call(t, args)
		if res.Kind != pipeline.Complete || !first.Created {
			t.Fatalf("keyed call = kind %d %v, %+v", res.Kind, res.Err, first)
		}
		again, res := e.call(t, args)
		if res.Kind != pipeline.Complete || again.Created || again.URL != first.URL {
			t.Errorf("repeat of the key = kind %d %v, link %s created %t; want the same link (%s), not created", res.Kind, res.Err, again.LinkID, again.Created, first.LinkID)
		}
		sig, _ := url.Parse(first.URL)
		rows, err := db.Query(context.Background(), `SELECT response FROM idempotency_key`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var stored []byte
			if err := rows.Scan(&stored); err != nil {
				t.Fatal(err)
			}
			n++
			for what, secret := range map[string]string{"the signature": sig.Query().Get("sig"), "the URL's path": "/files/", "a sig parameter": "sig=", "the link id": first.LinkID} {
				if bytes.Contains(stored, []byte(secret)) {
					t.Errorf("the idempotency key stores %s", what)
				}
			}
		}
		if err := rows.Err(); err != nil || n != 1 {
			t.Errorf("%d idempotency keys (%v), want 1", n, err)
		}
		if got := pipelinetest.Audited(t, db, files.CreateLinkName); !maps.Equal(got, map[string]int{"allowed": 1, "unchanged": 1}) {
			t.Errorf("audit outcomes %v, want one allowed, one unchanged", got)
		}
	})
}

// TestTamperedURLs: a URL with any part changed is refused
// link_signature_invalid, over real HTTP; a URL signed under a key still
// in the ring downloads after a rotation, one under a dropped key does not.
func TestTamperedURLs(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newLinkEnv(t, db, oldKey)
		f := add(t, db, files.Upload{Name: "a.pdf", Content: []byte("%PDF-1.4 one"), CreatedBy: "ana"})
		g := add(t, db, files.Upload{Name: "b.pdf", Content: []byte("%PDF-1.4 two"), CreatedBy: "ana"})
		good := e.create(t, f.ID, t0.Add(time.Hour))
		other := e.create(t, g.ID, t0.Add(2*time.Hour))
		u, err := url.Parse(good.URL)
		if err != nil {
			t.Fatal(err)
		}
		ou, _ := url.Parse(other.URL)
		with := func(change func(path string, q url.Values) string) string {
			q := u.Query()
			p := change(u.Path, q)
			v := *u
			v.Path, v.RawQuery = p, q.Encode()
			return v.String()
		}
		sig := u.Query().Get("sig")
		flipped := []byte(sig)
		flipped[3] ^= 1
		for name, tampered := range map[string]string{
			"other link id":     with(func(p string, q url.Values) string { q.Set("link", ou.Query().Get("link")); return p }),
			"other file id":     with(func(string, url.Values) string { return "/files/" + g.ID + "/download" }),
			"later expiry":      with(func(p string, q url.Values) string { q.Set("exp", "4102444800"); return p }),
			"expiry with zero":  with(func(p string, q url.Values) string { q.Set("exp", "0"+q.Get("exp")); return p }),
			"signature flipped": with(func(p string, q url.Values) string { q.Set("sig", string(flipped)); return p }),
			"other's signature": with(func(p string, q url.Values) string { q.Set("sig", ou.Query().Get("sig")); return p }),
			"no signature":      with(func(p string, q url.Values) string { q.Del("sig"); return p }),
			"two signatures":    with(func(p string, q url.Values) string { q.Add("sig", sig); return p }),
			"unknown key id":    with(func(p string, q url.Values) string { q.Set("kid", "nope"); return p }),
			"other key id":      with(func(p string, q url.Values) string { q.Set("kid", "new"); return p }),
			"malformed file id": with(func(string, url.Values) string { return "/files/f_x/download" }),
		} {
			t.Run(name, func(t *testing.T) { wantRefused(t, tampered, files.CodeLinkSignature) })
		}
		if status, body, _ := get(t, http.MethodGet, good.URL); status != http.StatusOK || string(body) != "%PDF-1.4 one" {
			t.Fatalf("GET untouched URL = %d %q", status, body)
		}
		// Rotation: the new key signs; the old one still verifies.
		rotated := newLinkEnv(t, db, newKey, oldKey)
		if status, _, _ := get(t, http.MethodGet, strings.Replace(good.URL, e.srv.URL, rotated.srv.URL, 1)); status != http.StatusOK {
			t.Errorf("URL under the old key after rotation = %d, want 200", status)
		}
		again := rotated.create(t, f.ID, t0.Add(time.Hour))
		if again.LinkID != good.LinkID || again.Created || !strings.Contains(again.URL, "kid=new") {
			t.Errorf("same link after rotation = %+v, want it re-signed under the new key", again)
		}
		dropped := newLinkEnv(t, db, newKey)
		wantRefused(t, strings.Replace(good.URL, e.srv.URL, dropped.srv.URL, 1), files.CodeLinkSignature)
	})
}

// TestCreateLinkArguments: expiresAt and fileId are checked, each refusal
// naming its field, and nothing is recorded.
func TestCreateLinkArguments(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) { testCreateLinkArguments(t, db) })
}

func testCreateLinkArguments(t *testing.T, db store.DB) {
	e := newLinkEnv(t, db, newKey)
	f := add(t, e.db, files.Upload{Name: "a.pdf", Content: []byte("%PDF-1.4"), CreatedBy: "ana"})
	for _, tt := range []struct {
		name, args string
		code       failure.Code
		field      string
	}{
		{"in the past", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-24T09:29:59Z"}`, failure.InvalidArguments, "expiresAt"},
		{"now", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-24T09:30:00Z"}`, failure.InvalidArguments, "expiresAt"},
		{"past 7 days", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-31T09:30:01Z"}`, failure.InvalidArguments, "expiresAt"},
		{"fraction of a second", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-25T09:30:00.5Z"}`, failure.InvalidArguments, "expiresAt"},
		{"not a real date", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-32T09:30:00Z"}`, failure.InvalidArguments, "expiresAt"},
		{"no zone", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-25T09:30:00"}`, failure.InvalidArguments, "expiresAt"},
		{"offset of 24 hours", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-26T09:30:00+24:00"}`, failure.InvalidArguments, "expiresAt"},
		{"offset of 60 minutes", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-26T09:30:00+23:60"}`, failure.InvalidArguments, "expiresAt"},
		{"offset minutes 60", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-25T09:30:00-00:60"}`, failure.InvalidArguments, "expiresAt"},
		{"a date only", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-25"}`, failure.InvalidArguments, "expiresAt"},
		{"malformed file id", `{"fileId":"abc","expiresAt":"2025-12-25T09:30:00Z"}`, failure.InvalidArguments, "fileId"},
		{"missing expiry", `{"fileId":"` + f.ID + `"}`, failure.InvalidArguments, "expiresAt"},
		{"unknown argument", `{"fileId":"` + f.ID + `","expiresAt":"2025-12-25T09:30:00Z","url":"x"}`, failure.InvalidArguments, "url"},
		{"unknown file", `{"fileId":"f_` + strings.Repeat("a", 26) + `","expiresAt":"2025-12-25T09:30:00Z"}`, files.CodeFileNotFound, "fileId"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, res := e.call(t, tt.args)
			if res.Kind != pipeline.ToolError || res.Err.Code != tt.code || res.Err.Field != tt.field {
				t.Errorf("call = kind %d %v, want %s on %s", res.Kind, res.Err, tt.code, tt.field)
			}
		})
	}
	if n := countLinks(t, e.db); n != 0 {
		t.Errorf("%d links recorded by refused calls", n)
	}
	// The largest offsets RFC 3339 allows are accepted.
	for _, exp := range []string{"2025-12-25T10:00:00+23:59", "2025-12-24T09:31:00-23:59"} {
		if a, res := e.call(t, `{"fileId":"`+f.ID+`","expiresAt":"`+exp+`"}`); res.Kind != pipeline.Complete || !a.Created {
			t.Errorf("expiresAt %s = kind %d %v, want a link", exp, res.Kind, res.Err)
		}
	}
	// The last second of the seventh day is accepted.
	if a := e.create(t, f.ID, t0.Add(files.MaxLinkLifetime)); !a.Created {
		t.Errorf("7 days ahead = %+v", a)
	}
}

// TestToolWithoutSigner: the contract is listable without keys, and a
// pipeline refuses to serve the tool without them.
func TestToolWithoutSigner(t *testing.T) {
	tools, err := files.Tools(nil)
	if err != nil || len(tools) != 1 || tools[0].Contract.Name != files.CreateLinkName || tools[0].Execute != nil {
		t.Fatalf("Tools(nil) = %+v, %v", tools, err)
	}
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ids, err := idempotency.New(db.Dialect(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pipeline.New(pipeline.Options{Tools: tools, DB: db, Keys: ids}); err == nil {
			t.Error("pipeline.New served files.create_download_link with no link keys")
		}
	})
	c := tools[0].Contract
	if c.RiskLevel != "medium" || c.Idempotency.Kind != "natural" || !c.Allows(files.CodeFileNotFound) || c.Permissions[0] != "files:share" {
		t.Errorf("contract = %+v", c)
	}
}
