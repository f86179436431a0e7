package authserver

import (
	"slices"

	"github.com/cobranca/cobranca/internal/auth"
)

// serverMetadata is the RFC 8414 authorization server metadata. What is
// left out is left out on purpose: no refresh_token grant, no
// confidential clients, no implicit or hybrid response types.
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	ResponseModesSupported            []string `json:"response_modes_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	UILocalesSupported                []string `json:"ui_locales_supported"`
	// RFC 9207: the authorization response names the issuer.
	AuthorizationResponseISSParameterSupported bool `json:"authorization_response_iss_parameter_supported"`
	// RFC 8707: resource indicators are accepted (this server's resource).
	ResourceIndicatorsSupported bool `json:"resource_indicators_supported"`
}

// openIDMetadata is serverMetadata plus what OpenID Connect Discovery 1.0
// §3 adds, served at /.well-known/openid-configuration.
type openIDMetadata struct {
	serverMetadata
	SubjectTypesSupported            []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported []string `json:"id_token_signing_alg_values_supported"`
	ClaimsSupported                  []string `json:"claims_supported"`
	ACRValuesSupported               []string `json:"acr_values_supported,omitempty"`
}

// The one value of each parameter this server supports.
const (
	responseTypeCode       = "code"
	grantAuthorizationCode = "authorization_code"
	methodS256             = "S256"
	authMethodNone         = "none"
)

func (s *Server) serverMetadata() serverMetadata {
	return serverMetadata{
		Issuer:                                     s.auth.Issuer(),
		AuthorizationEndpoint:                      s.endpoint(AuthorizePath),
		TokenEndpoint:                              s.endpoint(TokenPath),
		RegistrationEndpoint:                       s.endpoint(RegisterPath),
		JWKSURI:                                    s.endpoint(auth.JWKSPath),
		ScopesSupported:                            slices.Clone(s.scopes),
		ResponseTypesSupported:                     []string{responseTypeCode},
		ResponseModesSupported:                     []string{"query"},
		GrantTypesSupported:                        []string{grantAuthorizationCode},
		TokenEndpointAuthMethodsSupported:          []string{authMethodNone},
		CodeChallengeMethodsSupported:              []string{methodS256},
		UILocalesSupported:                         []string{"pt-BR", "en"},
		AuthorizationResponseISSParameterSupported: true,
		ResourceIndicatorsSupported:                true,
	}
}

func (s *Server) openIDMetadata() openIDMetadata {
	return openIDMetadata{
		serverMetadata:                   s.serverMetadata(),
		SubjectTypesSupported:            []string{"public"},
		IDTokenSigningAlgValuesSupported: []string{"EdDSA"},
		ClaimsSupported: []string{"iss", "sub", "aud", "azp", "exp", "iat", "auth_time", "nonce",
			"acr", "amr", "act"},
		ACRValuesSupported: slices.Clone(s.acr),
	}
}
