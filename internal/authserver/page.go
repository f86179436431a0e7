package authserver

import (
	"html/template"
	"net/http"
	"slices"

	"golang.org/x/text/language"
)

// The sign-in page is server-rendered HTML without JavaScript, in
// Brazilian Portuguese or English, as the browser's Accept-Language
// prefers (Brazilian Portuguese when it says nothing).

// text is the page's wording in one language.
type text struct {
	Lang, Title, Banner, Intro, Subject, SubjectHelp, Scopes, Kind, Person, Agent,
	AgentHelp, ACR, ACRHelp, Roles, RolesHelp, Allow, Deny, ErrorTitle, ErrorHelp, Client, ClientID, RedirectTo string
}

var (
	languages = []language.Tag{language.BrazilianPortuguese, language.English}
	matcher   = language.NewMatcher(languages)
	texts     = []text{
		{
			Lang:        "pt-BR",
			Title:       "Entrar — servidor de autorização de DESENVOLVIMENTO",
			Banner:      "Servidor de autorização de DESENVOLVIMENTO do cobranca. Não use em produção: aqui qualquer pessoa escolhe quem é.",
			Intro:       "pede acesso ao cobranca. Escolha a identidade com que ele vai agir.",
			Client:      "O cliente",
			ClientID:    "id do cliente",
			RedirectTo:  "Ao entrar, o código de autorização vai para",
			Subject:     "Sujeito (sub)",
			SubjectHelp: "Quem entra: um nome ou e-mail.",
			Scopes:      "Escopos",
			Kind:        "Quem age",
			Person:      "Uma pessoa",
			Agent:       "Um agente (o cliente age pelo sujeito: claim act)",
			AgentHelp:   "Agentes não podem aprovar ações críticas.",
			ACR:         "Nível de autenticação (acr)",
			ACRHelp:     "Vazio, um valor de COBRANCA_STEPUP_ACR ou qualquer texto. A autenticação vale a partir de agora (auth_time).",
			Roles:       "Papéis",
			RolesHelp:   "Separados por espaço, na claim de COBRANCA_ROLES_CLAIM. Já vêm com os papéis que aprovam as ferramentas críticas servidas e que dão baixa em faturas; apague-os para ver as recusas approver_lacks_role e person_lacks_role. Os tokens de um agente não levam papéis.",
			Allow:       "Entrar",
			Deny:        "Recusar",
			ErrorTitle:  "Não foi possível entrar",
			ErrorHelp:   "Volte ao cliente e comece de novo.",
		},
		{
			Lang:        "en",
			Title:       "Sign in — DEVELOPMENT authorization server",
			Banner:      "cobranca's DEVELOPMENT authorization server. Never use it in production: here anyone chooses who they are.",
			Intro:       "asks for access to cobranca. Choose the identity it will act with.",
			Client:      "The client",
			ClientID:    "client id",
			RedirectTo:  "Signing in sends the authorization code to",
			Subject:     "Subject (sub)",
			SubjectHelp: "Who signs in: a name or an e-mail address.",
			Scopes:      "Scopes",
			Kind:        "Who acts",
			Person:      "A person",
			Agent:       "An agent (the client acts for the subject: act claim)",
			AgentHelp:   "Agents cannot approve critical actions.",
			ACR:         "Authentication context class (acr)",
			ACRHelp:     "Empty, a COBRANCA_STEPUP_ACR value, or any text. The authentication counts from now (auth_time).",
			Roles:       "Roles",
			RolesHelp:   "Space-separated, in the COBRANCA_ROLES_CLAIM claim. Pre-filled with the roles that approve the served critical tools and that write invoices off; clear them to see the approver_lacks_role and person_lacks_role refusals. An agent's tokens carry no roles.",
			Allow:       "Sign in",
			Deny:        "Deny",
			ErrorTitle:  "Sign-in failed",
			ErrorHelp:   "Go back to the client and start again.",
		},
	}
)

// textFor picks the page's language from r's Accept-Language.
func textFor(r *http.Request) text {
	_, i := language.MatchStrings(matcher, r.Header.Get("Accept-Language"))
	return texts[i]
}

// scopeChoice is one checkbox.
type scopeChoice struct {
	Name    string
	Checked bool
}

// pageData is what the sign-in page shows.
type pageData struct {
	T        text
	Client   string // the client's name, or its id
	ClientID string
	// Redirect is where the code goes: the name is the client's own
	// claim, this is not.
	Redirect string
	Sealed   string
	Subject  string
	Scopes   []scopeChoice
	Agent    bool
	ACR      string
	ACRs     []string
	Roles    string
	Problem  string // why the last submission was refused
	Action   string
	ErrCode  string // an error page's code
	ErrText  string
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="{{.T.Lang}}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.T.Title}}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:40rem;margin:1rem auto;padding:0 1rem;color:#222}
.banner{background:#b00020;color:#fff;font-weight:bold;padding:.75rem 1rem;border-radius:.25rem}
.problem{background:#fff3cd;border:1px solid #e0c36c;padding:.5rem 1rem}
fieldset{border:1px solid #ccc;margin:1rem 0}
label{display:block;margin:.25rem 0}
small{color:#555;display:block}
button{font-size:1rem;padding:.5rem 1.25rem;margin-right:.5rem}
</style>
</head>
<body>
<p class="banner" role="alert">{{.T.Banner}}</p>
{{if .ErrCode}}
<h1>{{.T.ErrorTitle}}</h1>
<p><code id="error">{{.ErrCode}}</code>: {{.ErrText}}</p>
<p>{{.T.ErrorHelp}}</p>
{{else}}
<h1>{{.T.Title}}</h1>
<p>{{.T.Client}} <strong id="client">{{.Client}}</strong> {{.T.Intro}}</p>
<p>{{.T.RedirectTo}} <code id="redirect">{{.Redirect}}</code> <small>{{.T.ClientID}}: <code id="client-id">{{.ClientID}}</code></small></p>
{{if .Problem}}<p class="problem" role="alert">{{.Problem}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="request" value="{{.Sealed}}">
<label for="subject">{{.T.Subject}}</label>
<input id="subject" name="subject" value="{{.Subject}}" required maxlength="255" autofocus>
<small>{{.T.SubjectHelp}}</small>
<fieldset><legend>{{.T.Scopes}}</legend>
{{range .Scopes}}<label><input type="checkbox" name="scope" value="{{.Name}}"{{if .Checked}} checked{{end}}> <code>{{.Name}}</code></label>
{{end}}</fieldset>
<fieldset><legend>{{.T.Kind}}</legend>
<label><input type="radio" name="kind" value="person"{{if not .Agent}} checked{{end}}> {{.T.Person}}</label>
<label><input type="radio" name="kind" value="agent"{{if .Agent}} checked{{end}}> {{.T.Agent}}</label>
<small>{{.T.AgentHelp}}</small>
</fieldset>
<label for="acr">{{.T.ACR}}</label>
<input id="acr" name="acr" value="{{.ACR}}" list="acr-values" maxlength="255">
<datalist id="acr-values">{{range .ACRs}}<option value="{{.}}">{{end}}</datalist>
<small>{{.T.ACRHelp}}{{if .ACRs}} COBRANCA_STEPUP_ACR: {{range $i, $a := .ACRs}}{{if $i}}, {{end}}<code>{{$a}}</code>{{end}}{{end}}</small>
<label for="roles">{{.T.Roles}}</label>
<input id="roles" name="roles" value="{{.Roles}}">
<small>{{.T.RolesHelp}}</small>
<p><button type="submit" name="action" value="allow">{{.T.Allow}}</button>
<button type="submit" name="action" value="deny">{{.T.Deny}}</button></p>
</form>
{{end}}
</body>
</html>
`))

// render writes the page with status; never cached, never framed. Its referrer policy is
// same-origin, not no-referrer: under no-referrer a browser sends the sign-in form's POST with
// "Origin: null" (Fetch's origin serialization), which the Origin guard in front of this
// server rightly refuses; same-origin still sends no referrer to another site.
func render(w http.ResponseWriter, status int, d pageData) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "same-origin")
	w.WriteHeader(status)
	_ = pageTemplate.Execute(w, d)
}

// renderError shows an error that cannot go back to the client.
func renderError(w http.ResponseWriter, r *http.Request, e *oauthError) {
	status := e.status
	if status < 400 {
		status = http.StatusBadRequest
	}
	render(w, status, pageData{T: textFor(r), ErrCode: e.Code, ErrText: e.Description})
}

// formPage is the sign-in form for req, with what was chosen so far.
func (s *Server) formPage(r *http.Request, req *authRequest, subject string, scopes []string, agent bool, acr, roles, problem string) pageData {
	d := pageData{T: textFor(r), Client: req.ClientName, ClientID: req.ClientID, Redirect: req.RedirectURI, Sealed: s.seal(req), Subject: subject, Agent: agent,
		ACR: acr, ACRs: s.acr, Roles: roles, Problem: problem, Action: AuthorizePath}
	if d.Client == "" {
		d.Client = req.ClientID
	}
	for _, sc := range s.scopes {
		d.Scopes = append(d.Scopes, scopeChoice{Name: sc, Checked: slices.Contains(scopes, sc)})
	}
	return d
}
