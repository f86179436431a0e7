package auth

import (
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

func TestCheckStepUp(t *testing.T) {
	now := t0
	req := StepUp{ACRValues: []string{"urn:cobranca:mfa", "phr"}, MaxAge: 5 * time.Minute}
	tests := []struct {
		name       string
		req        StepUp
		p          *Principal
		wantReason string // "" means ok
	}{
		{"ok", req, &Principal{ACR: "phr", AuthTime: now.Add(-time.Minute)}, ""},
		{"ok at exactly max age", req, &Principal{ACR: "phr", AuthTime: now.Add(-5 * time.Minute)}, ""},
		{"acr not allowed", req, &Principal{ACR: "pwd", AuthTime: now}, "authentication context class not allowed"},
		{"no acr", req, &Principal{AuthTime: now}, "authentication context class not allowed"},
		{"auth_time too old", req, &Principal{ACR: "urn:cobranca:mfa", AuthTime: now.Add(-6 * time.Minute)}, "authentication is too old"},
		{"auth_time within the leeway ahead", req, &Principal{ACR: "phr", AuthTime: now.Add(time.Minute)}, ""},
		{"auth_time in the future", req, &Principal{ACR: "phr", AuthTime: now.Add(time.Hour)}, "authentication time is in the future"},
		{"missing auth_time", req, &Principal{ACR: "urn:cobranca:mfa"}, "authentication time unknown"},
		{"no principal", req, nil, "no authenticated user"},
		{"max age only", StepUp{MaxAge: time.Minute}, &Principal{ACR: "pwd", AuthTime: now.Add(-30 * time.Second)}, ""},
		{"acr only, old auth is fine", StepUp{ACRValues: []string{"phr"}}, &Principal{ACR: "phr"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckStepUp(tt.req, tt.p, now)
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("CheckStepUp = %v, want nil", err)
				}
				return
			}
			se, ok := errors.AsType[*StepUpError](err)
			if !ok {
				t.Fatalf("CheckStepUp = %v, want a *StepUpError", err)
			}
			if se.Reason != tt.wantReason {
				t.Errorf("reason = %q, want %q", se.Reason, tt.wantReason)
			}
			if diff := cmp.Diff(tt.req, se.Required); diff != "" {
				t.Errorf("Required (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChallenges(t *testing.T) {
	a := &Authenticator{metadataURL: metaURL}
	tests := []struct {
		name       string
		write      func(w http.ResponseWriter)
		wantStatus int
		want       string
	}{
		{
			name:       "insufficient scope names every missing scope",
			write:      func(w http.ResponseWriter) { a.WriteInsufficientScope(w, []string{"reminders.send", "contacts.write"}) },
			wantStatus: http.StatusForbidden,
			want:       `Bearer error="insufficient_scope", error_description="the token lacks scopes this call needs", scope="reminders.send contacts.write", resource_metadata="` + metaURL + `"`,
		},
		{
			name: "step-up with acr values and max age",
			write: func(w http.ResponseWriter) {
				a.WriteStepUpRequired(w, StepUp{ACRValues: []string{"urn:cobranca:mfa", "phr"}, MaxAge: 5 * time.Minute})
			},
			wantStatus: http.StatusUnauthorized,
			want:       `Bearer error="insufficient_user_authentication", error_description="this action needs authentication with urn:cobranca:mfa or phr within the last 5m0s", acr_values="urn:cobranca:mfa phr", max_age="300", resource_metadata="` + metaURL + `"`,
		},
		{
			name:       "step-up with max age only",
			write:      func(w http.ResponseWriter) { a.WriteStepUpRequired(w, StepUp{MaxAge: time.Minute}) },
			wantStatus: http.StatusUnauthorized,
			want:       `Bearer error="insufficient_user_authentication", error_description="this action needs authentication within the last 1m0s", max_age="60", resource_metadata="` + metaURL + `"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			tt.write(rec)
			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", rec.Code, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.want, rec.Header().Get("WWW-Authenticate")); diff != "" {
				t.Errorf("WWW-Authenticate (-want +got):\n%s", diff)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["error"] == "" {
				t.Errorf("body %q: want a JSON error (%v)", rec.Body, err)
			}
		})
	}
}

func TestMissingScopes(t *testing.T) {
	p := &Principal{Scopes: []string{"a", "c"}}
	got := p.MissingScopes([]string{"a", "b", "c", "d", "b"})
	if diff := cmp.Diff([]string{"b", "d"}, got); diff != "" {
		t.Errorf("MissingScopes (-want +got):\n%s", diff)
	}
	if got := p.MissingScopes([]string{"a"}); got != nil {
		t.Errorf("MissingScopes(granted) = %v, want nil", got)
	}
	var nobody *Principal
	if diff := cmp.Diff([]string{"a"}, nobody.MissingScopes([]string{"a"})); diff != "" {
		t.Errorf("nil principal (-want +got):\n%s", diff)
	}
}

// TestMetadata serves the RFC 9728 document over HTTP at both well-known
// paths and compares it, as a JSON value, with the golden file.
func TestMetadata(t *testing.T) {
	e := newEnv(t)
	h := e.a.MetadataHandler([]string{"collections.read", "reminders.draft", "collections.read"})
	mux := http.NewServeMux()
	mux.Handle("GET /.well-known/oauth-protected-resource", h)
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	golden := filepath.Join("testdata", "protected-resource-metadata.json")
	for _, path := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"} {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		// The issuer is an httptest URL; make the golden file stable.
		if got["authorization_servers"].([]any)[0] != e.iss.URL() {
			t.Errorf("%s: authorization_servers = %v, want [%s]", path, got["authorization_servers"], e.iss.URL())
		}
		got["authorization_servers"] = []any{"https://issuer.test"}
		if *update {
			data, _ := json.MarshalIndent(got, "", "  ")
			if err := os.WriteFile(golden, append(data, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		var want map[string]any
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", path, diff)
		}
	}
	if got := e.a.ResourceMetadataURL(); got != metaURL {
		t.Errorf("ResourceMetadataURL = %q, want %q", got, metaURL)
	}
}

func TestMetadataURL(t *testing.T) {
	for resource, want := range map[string]string{
		"https://cobranca.test/mcp":    "https://cobranca.test/.well-known/oauth-protected-resource/mcp",
		"https://cobranca.test":        "https://cobranca.test/.well-known/oauth-protected-resource",
		"https://cobranca.test/":       "https://cobranca.test/.well-known/oauth-protected-resource",
		"http://localhost:8080/a/mcp/": "http://localhost:8080/.well-known/oauth-protected-resource/a/mcp",
	} {
		if got := MetadataURL(resource); got != want {
			t.Errorf("MetadataURL(%q) = %q, want %q", resource, got, want)
		}
	}
}
