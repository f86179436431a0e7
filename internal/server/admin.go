package server

import (
	"context"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/web"
	"github.com/go-chi/chi/v5"
)

// The admin API: the forbidden tools, for people only.
const (
	AdminWriteOffsPath = web.WriteOffsPath // POST: write an invoice off (JSON with a bearer token; the page's form with a session)
	AdminContractsPath = "/admin/contracts"
)

// maxAdminBody bounds an admin call's JSON body: a write-off's arguments are a few hundred
// bytes.
const maxAdminBody = 64 << 10

// AdminRunner runs the forbidden tools for people (pipeline.Pipeline).
type AdminRunner interface {
	Admin(ctx context.Context, c pipeline.Call) pipeline.Result
	AdminContracts() []*contract.Contract
	// Refused audits a call the admin API refused before Admin could read it.
	Refused(ctx context.Context, pr *auth.Principal, name string, outcome auditlog.Outcome, code failure.Code)
}

// Sessions reads the signed-in person of a request from the pages' session (web.Pages).
type Sessions interface {
	SessionPrincipal(r *http.Request) (*auth.Principal, error)
}

// adminRoutes adds the admin API to r: with a bearer token, behind bearer (the guard of every
// token route), JSON in and out; without one, the signed-in person's session (the page's form
// posts; a session reads the contracts), under the per-origin budget.
func adminRoutes(r chi.Router, d Deps, bearer func(http.Handler) http.Handler) {
	// A page's browser sends the page's own Origin, which COBRANCA_ALLOWED_ORIGINS (the
	// origins allowed to call /mcp) need not name: the session routes take it besides them.
	guard := guardOrigin(d.AllowedOrigins, d.AllowedHosts)
	session := func(h http.Handler) http.Handler {
		if d.Limits != nil {
			h = d.Limits.Origin(h)
		}
		guarded := guard(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if sameOrigin(r) && hostAllowed(r.Host, d.AllowedHosts) {
				h.ServeHTTP(w, r)
				return
			}
			guarded.ServeHTTP(w, r)
		})
	}
	writeOff := bearer(adminWriteOff(d.Admin, d.WriteOffTool, d.Auth))
	contracts := bearer(adminContracts(d.Admin))
	// The token check with no token answers its 401 challenge.
	challenge := d.Auth.Middleware(http.NotFoundHandler())
	var pages http.Handler = http.NotFoundHandler()
	if d.Web != nil {
		pages = session(d.Web)
	}
	sessionContracts := session(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var pr *auth.Principal
		if d.Sessions != nil {
			var err error
			if pr, err = d.Sessions.SessionPrincipal(r); err != nil {
				d.Logger.ErrorContext(r.Context(), "admin: session lookup failed", "err", err)
				failure.WriteHTTP(w, http.StatusServiceUnavailable, &failure.Error{Code: failure.Unavailable,
					Message: "the session could not be read; retry later (ref " + request.From(r.Context()).ID + ")"})
				return
			}
		}
		if pr == nil { // no token, no session: the bearer challenge (the budget is spent already)
			challenge.ServeHTTP(w, r)
			return
		}
		info := request.From(r.Context())
		info.Subject, info.Client = pr.Subject, pr.ClientID
		adminContracts(d.Admin).ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), pr)))
	}))
	r.Method(http.MethodPost, AdminWriteOffsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hasToken(r) && isForm(r) {
			pages.ServeHTTP(w, r)
			return
		}
		writeOff.ServeHTTP(w, r)
	}))
	r.Method(http.MethodGet, AdminWriteOffsPath, pages)
	r.Method(http.MethodGet, AdminContractsPath, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hasToken(r) {
			contracts.ServeHTTP(w, r)
			return
		}
		sessionContracts.ServeHTTP(w, r)
	}))
}

// sameOrigin: the request's Origin names its own Host (the page the browser shows is this
// server's: behind a proxy, r.Host is the public host the browser addressed).
func sameOrigin(r *http.Request) bool {
	u, err := url.Parse(r.Header.Get("Origin"))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// hasToken: the request carries an Authorization header (the bearer guard judges it).
func hasToken(r *http.Request) bool { return len(r.Header.Values("Authorization")) > 0 }

// isForm: the body is a browser's form.
func isForm(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/x-www-form-urlencoded"
}

// adminWriteOff serves POST /admin/write-offs with a bearer token: the JSON body is
// the arguments of the tool Deps.WriteOffTool names, run by pipeline's Admin for the token's principal; the answer
// is the write-off (200), or the refusal as every route answers one: 401/403 with a Bearer
// challenge for a step-up or a missing scope, otherwise {"error": …} with the code's status.
func adminWriteOff(run AdminRunner, tool string, a *auth.Authenticator) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pr, _ := auth.PrincipalFrom(r.Context())
		// A refusal before Admin reads the call is in the audit trail as well, as /mcp's
		// transport refusals are.
		refuse := func(status int, fe *failure.Error) {
			run.Refused(r.Context(), pr, tool, auditlog.Rejected, fe.Code)
			failure.WriteHTTP(w, status, fe)
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			refuse(http.StatusUnsupportedMediaType, &failure.Error{Code: failure.InvalidArguments, Field: "Content-Type", Message: "must be application/json"})
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				refuse(http.StatusRequestEntityTooLarge, &failure.Error{Code: failure.InvalidArguments, Field: "body", Message: "exceeds " + strconv.Itoa(maxAdminBody) + " bytes"})
				return
			}
			refuse(http.StatusBadRequest, &failure.Error{Code: failure.InvalidArguments, Field: "body", Message: "could not be read"})
			return
		}
		res := run.Admin(r.Context(), pipeline.Call{Principal: pr, RequestID: request.From(r.Context()).ID, Tool: tool, Args: body})
		writeAdminResult(w, a, res)
	}
}

// writeAdminResult answers res, an admin call's result, over HTTP.
func writeAdminResult(w http.ResponseWriter, a *auth.Authenticator, res pipeline.Result) {
	switch res.Kind {
	case pipeline.Complete:
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(append(res.Structured, '\n'))
		return
	case pipeline.Denied:
		a.WriteInsufficientScope(w, res.Missing)
		return
	}
	fe := res.Err
	if fe == nil { // Admin ends complete, denied or with a failure
		fe = &failure.Error{Code: failure.Internal, Message: "internal error"}
	}
	if su, ok := errors.AsType[*auth.StepUpError](fe); ok {
		a.WriteStepUpRequired(w, su.Required)
		return
	}
	if fe.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(fe.RetryAfter.Seconds())), 10))
	}
	w.Header().Set("Cache-Control", "no-store")
	failure.WriteHTTP(w, failure.HTTPStatus(fe.Code), fe)
}

// adminContracts serves GET /admin/contracts: to a person, the contracts of the forbidden tools
// the person holds a role for (an admin listing: an agent gets 403 person_required, a person
// holding none of the roles 403 person_lacks_role).
func adminContracts(run AdminRunner) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		pr, _ := auth.PrincipalFrom(r.Context())
		var mine []*contract.Contract
		var refusal *failure.Error
		for _, c := range run.AdminContracts() {
			if fe := pipeline.AdminAdmits(pr, c); fe != nil {
				refusal = fe
				continue
			}
			mine = append(mine, c)
		}
		if len(mine) == 0 {
			if refusal == nil { // no forbidden tool is served at all
				refusal = &failure.Error{Code: failure.PersonLacksRole, Field: "token", Message: "no tool of the admin surface is served"}
			}
			failure.WriteHTTP(w, http.StatusForbidden, refusal)
			return
		}
		writeContracts(w, mine)
	}
}
