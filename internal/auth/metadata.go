package auth

import (
	"encoding/json"
	"net/http"
	"slices"
)

// ResourceMetadata is the part of the RFC 9728 protected resource metadata
// cobranca publishes; its JSON matches go-sdk's
// oauthex.ProtectedResourceMetadata, without making this package depend on
// the SDK.
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers,omitempty"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// Metadata returns this resource's RFC 9728 metadata; scopes are every
// scope a visible tool needs.
func (a *Authenticator) Metadata(scopes []string) *ResourceMetadata {
	scopes = slices.Clone(scopes)
	slices.Sort(scopes)
	return &ResourceMetadata{
		Resource:               a.cfg.Resource,
		AuthorizationServers:   []string{a.cfg.Issuer},
		ScopesSupported:        slices.Compact(scopes),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           a.cfg.ResourceName,
	}
}

// MetadataHandler serves Metadata(scopes) at
// /.well-known/oauth-protected-resource (and its /mcp variant).
func (a *Authenticator) MetadataHandler(scopes []string) http.Handler {
	return PublicJSON(a.Metadata(scopes))
}

// JWKSPath is where JWKSHandler is served: the jwks_uri of the development
// authorization server.
const JWKSPath = "/.well-known/jwks.json"

// JWKSHandler serves the development signing key as a JWK Set at JWKSPath;
// nil outside development mode.
func (a *Authenticator) JWKSHandler() http.Handler {
	if a.dev == nil {
		return nil
	}
	return PublicJSON(a.dev.jwks())
}

// PublicJSON serves a fixed public document (discovery metadata, a key set)
// to anyone, browsers included: GET and HEAD, cacheable, CORS open.
func PublicJSON(v any) http.Handler {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only our own static structs get here
	}
	body = append(body, '\n')
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "public, max-age=300")
		h.Set("Access-Control-Allow-Origin", "*")
		_, _ = w.Write(body)
	})
}
