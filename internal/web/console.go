package web

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/request"
)

// The console's routes: the finance team's pages, each a GET (internal/server sends every
// path under ConsolePath here).
const (
	ConsolePath = "/console" // the approvals inbox: the console's first page
	ToolsPath   = "/console/tools"
	HealthPath  = "/console/health"
	// CustomersPath lists the customers; CustomerPath (?id=) shows one with its messages.
	CustomersPath = "/console/customers"
	CustomerPath  = "/console/customers/detail"
	OutboxPath    = "/console/outbox"
)

// The console's refusals.
const (
	// CodeConsoleAgent: an agent's session opened the console, which is for people only.
	CodeConsoleAgent failure.Code = "console_person_required"
	// CodeConsoleRole: the person holds none of the console's roles.
	CodeConsoleRole failure.Code = "console_role_required"
)

// EventConsoleRefused is the audit event of a console page refused (CodeConsoleAgent,
// CodeConsoleRole), counted like the forms' refusals (signin.Config.Refusals); its Tool is
// the page's route.
const EventConsoleRefused = "web.console.refused"

// consoleHTML holds the console's pages: each file defines "content", the page's main part,
// which the layout ("page", page.html) puts under the console's header and navigation.
//
//go:embed console_*.html
var consoleHTML embed.FS

// consolePage is one page of the console. A page the Config gives no data for is neither
// served nor in the navigation.
type consolePage struct {
	path string
	file string // its template, in consoleHTML
	// name is its title and its entry in the navigation.
	name func(*texts) string
	// read fills the page for the signed-in person (d.Session), or says why it cannot; it
	// sets d.View, what the page's template reads.
	read func(ctx context.Context, r *http.Request, d *pageData) error
	tmpl func() *template.Template
	// under is the path of the page in the navigation this one is part of (a customer's page
	// is under the customers'): it is not in the navigation itself; "" for a page that is.
	under string
}

// consoleData is what the layout shows around a console page.
type consoleData struct {
	Nav []navLink
	// Roles are the console's roles the signed-in person holds.
	Roles []string
}

type navLink struct {
	Name, Href string
	Current    bool
}

// consolePages are the console's pages, in the navigation's order, for cfg.
func (p *Pages) consolePages(cfg Config) []*consolePage {
	pages := []*consolePage{
		{path: ConsolePath, file: "console_inbox.html", name: func(t *texts) string { return t.InboxTitle }, read: p.readInbox},
	}
	if cfg.Tools != nil || cfg.Admin != nil {
		pages = append(pages, &consolePage{path: ToolsPath, file: "console_tools.html", name: func(t *texts) string { return t.ToolsTitle }, read: p.readTools})
	}
	if cfg.Health != nil {
		pages = append(pages, &consolePage{path: HealthPath, file: "console_health.html", name: func(t *texts) string { return t.HealthTitle }, read: p.readHealth})
	}
	if cfg.Customers != nil {
		pages = append(pages, &consolePage{path: CustomersPath, file: "console_customers.html", name: func(t *texts) string { return t.Messages.CustomersTitle }, read: p.readCustomers},
			&consolePage{path: CustomerPath, file: "console_customer.html", name: func(t *texts) string { return t.Messages.CustomerTitle }, read: p.readCustomer, under: CustomersPath})
	}
	if cfg.Outbox != nil {
		pages = append(pages, &consolePage{path: OutboxPath, file: "console_outbox.html", name: func(t *texts) string { return t.Messages.OutboxTitle }, read: p.readOutbox})
	}
	if cfg.Audit != nil {
		pages = append(pages, &consolePage{path: AuditPath, file: "console_audit.html", name: func(t *texts) string { return t.AuditTitle }, read: p.readAudit})
	}
	pages = append(pages, p.ledgerPages()...)
	if cfg.Imports != nil && cfg.Audit != nil {
		pages = append(pages, &consolePage{path: ImportPath, file: "console_import.html", name: func(t *texts) string { return t.Import.Title }, read: p.readImport})
	}
	if cfg.Schedules != nil {
		pages = append(pages, p.schedulePages()...)
	}
	for _, cp := range pages {
		if cp.tmpl = consoleTemplates[cp.file]; cp.tmpl == nil {
			panic("web: no console template " + cp.file)
		}
	}
	return pages
}

// consoleTemplates are the console's pages, each file in consoleHTML with the layout, parsed
// when first rendered (see layout).
var consoleTemplates = func() map[string]func() *template.Template {
	files, err := fs.Glob(consoleHTML, "console_*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]func() *template.Template{}
	for _, f := range files {
		out[f] = sync.OnceValue(func() *template.Template {
			return template.Must(template.Must(layout().Clone()).ParseFS(consoleHTML, f))
		})
	}
	return out
}()

// serveConsole serves a console page: to a signed-in person holding a console role, else a
// refusal (an agent's session sees nothing of it).
func (p *Pages) serveConsole(cp *consolePage) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		d := newPage(r, cp.name)
		keepQuery(r, d)
		sess, ok := p.signedIn(w, r, d.Here)
		if !ok {
			return
		}
		d.Session = sess
		pr := sess.Principal
		switch {
		case pr.IsAgent():
			p.refuseConsole(w, r, cp, &failure.Error{Code: CodeConsoleAgent, Message: "an agent's session sees nothing of the console: sign in as a person"})
			return
		case !may(pr, readConsole):
			p.refuseConsole(w, r, cp, &failure.Error{Code: CodeConsoleRole,
				Message: "the console needs one of the roles " + strings.Join(Roles, ", ")})
			return
		}
		d.Console = p.consoleHeader(r, d, cp)
		if err := cp.read(r.Context(), r, d); err != nil {
			if fe, ok := failure.As(err); ok {
				d.Console = nil
				status := failure.HTTPStatus(fe.Code)
				if fe.Code == codeNotFound {
					status = http.StatusNotFound
				}
				d.Refusal = p.refusalOf(d, status, fe)
				p.render(w, r, d.Refusal.Status, d)
				return
			}
			p.internal(w, r, err)
			return
		}
		p.renderWith(w, r, cp.tmpl(), http.StatusOK, d)
	}
}

// consoleHeader is the console's header for page d (current: the console page it is, nil for
// another page), or nil when the signed-in person may not read the console: the approval and
// write-off pages show it too, so that whoever works in the console finds the way back.
func (p *Pages) consoleHeader(r *http.Request, d *pageData, current *consolePage) *consoleData {
	pr := d.Session.Principal
	if !may(pr, readConsole) {
		return nil
	}
	c := &consoleData{}
	for _, role := range Roles {
		if pr.HasAnyRole([]string{role}) {
			c.Roles = append(c.Roles, role)
		}
	}
	for _, cp := range p.console {
		if cp.under != "" {
			continue
		}
		href := cp.path
		if r.URL.Query().Get("lang") != "" {
			href += "?" + url.Values{"lang": {d.Lang}}.Encode()
		}
		c.Nav = append(c.Nav, navLink{Name: cp.name(d.T), Href: href, Current: cp == current || current != nil && current.under == cp.path})
	}
	return c
}

// refuseConsole refuses page cp (403) and counts the refusal for the audit log.
func (p *Pages) refuseConsole(w http.ResponseWriter, r *http.Request, cp *consolePage, fe *failure.Error) {
	if p.refusals != nil {
		p.refusals.Refused(r, auditlog.Event{Name: EventConsoleRefused, Tool: "GET " + cp.path, RequestID: request.From(r.Context()).ID,
			Outcome: auditlog.Denied, FailureCode: string(fe.Code)})
	}
	p.refuse(w, r, http.StatusForbidden, fe)
}

// The inbox's page sizes and reach.
const (
	inboxPageSize = 50
	decidedShown  = 20
	decidedSince  = 7 * 24 * time.Hour
)

// inboxRow is an approval as the inbox lists it.
type inboxRow struct {
	*approval.Action
	// Summary is the preview's first line; Lines the preview's lines, Effects its side
	// effects.
	Summary        string
	Lines, Effects int64
	Age            time.Duration
	// MayDecide: the signed-in person holds a role deciding the call (the approval page
	// decides, and checks it again).
	MayDecide bool
}

type inboxView struct {
	Pending []inboxRow
	// Next is the link to the next page of pending approvals ("" when this is the last);
	// First, to the first, when this is not it.
	Next, First string
	Decided     []*approval.Action
}

// readInbox reads the approvals inbox: the pending approvals oldest first, a page at a time
// (?after= the last one's cursor), and the latest decisions.
func (p *Pages) readInbox(ctx context.Context, r *http.Request, d *pageData) error {
	after, err := parseCursor(r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	pending, err := p.decider.Store.ListPending(ctx, p.decider.DB, after, inboxPageSize+1)
	if err != nil {
		return err
	}
	v := &inboxView{}
	now := p.now()
	if len(pending) > inboxPageSize {
		pending = pending[:inboxPageSize]
		last := pending[len(pending)-1]
		v.Next = pageLink(r, url.Values{"after": {formatCursor(approval.Cursor{Created: last.Created, ID: last.ID})}})
	}
	if after.ID != "" {
		v.First = pageLink(r, nil)
	}
	pr := d.Session.Principal
	for _, a := range pending {
		summary, _, _ := strings.Cut(a.Preview, "\n")
		v.Pending = append(v.Pending, inboxRow{Action: a, Summary: summary, Lines: int64(strings.Count(a.Preview, "\n") + 1), Effects: int64(len(a.SideEffects)),
			Age: now.Sub(a.Created), MayDecide: pr.HasAnyRole(p.decider.RolesFor(a.Tool))})
	}
	if v.Decided, err = p.decider.Store.ListDecided(ctx, p.decider.DB, now.Add(-decidedSince), decidedShown); err != nil {
		return err
	}
	d.View = v
	return nil
}

// pageLink is this page's path with q, and the chosen language.
func pageLink(r *http.Request, q url.Values) string {
	if lang := r.URL.Query().Get("lang"); lang != "" {
		if q == nil {
			q = url.Values{}
		}
		q.Set("lang", lang)
	}
	if len(q) == 0 {
		return r.URL.Path
	}
	return r.URL.Path + "?" + q.Encode()
}

// A cursor is written <microseconds since 1970>.<approval id>.
func formatCursor(c approval.Cursor) string {
	return strconv.FormatInt(c.Created.UnixMicro(), 10) + "." + c.ID
}

// parseCursor reads ?after=; "" is the first page.
func parseCursor(s string) (approval.Cursor, error) {
	if s == "" {
		return approval.Cursor{}, nil
	}
	us, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || n < 0 || !ident.Valid(approval.Prefix, id) || strconv.FormatInt(n, 10) != us {
		return approval.Cursor{}, &failure.Error{Code: failure.InvalidArguments, Field: "after",
			Message: "must be a place in the list, as the page's own link writes it"}
	}
	return approval.Cursor{Created: time.UnixMicro(n), ID: id}, nil
}
