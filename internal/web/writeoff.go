package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// WriteOffsPath is the write-off page's route: GET shows the form to a signed-in, stepped-up
// person who holds the tool's role; POST (the form) writes the invoice off through the
// pipeline's Admin. internal/server sends a POST with a bearer token to the JSON admin API
// instead.
const WriteOffsPath = "/admin/write-offs"

// Admin runs forbidden tools for people (pipeline.Pipeline).
type Admin interface {
	Admin(ctx context.Context, c pipeline.Call) pipeline.Result
	AdminStepUp(name string) (auth.StepUp, bool)
	AdminContracts() []*contract.Contract
}

// writeOffForm is the form as the person filled it (strings, as typed), its idempotency key
// made when the page was first shown, and the write-off once recorded.
type writeOffForm struct {
	InvoiceID, CustomerID, AmountCents, Reason, Key string
	Done                                            *writeoffs.Result
}

// SessionPrincipal returns the signed-in person of r (nil when the browser has no live
// session): internal/server lets a session, as well as a bearer token, read the admin API.
func (p *Pages) SessionPrincipal(r *http.Request) (*auth.Principal, error) {
	sess, err := p.rp.Session(r)
	if err != nil || sess == nil {
		return nil, err
	}
	return sess.Principal, nil
}

// writeOffContract is the contract the page runs, nil when the pipeline has no such tool.
func (p *Pages) writeOffContract() *contract.Contract {
	if p.admin == nil {
		return nil
	}
	cs := p.admin.AdminContracts()
	if i := slices.IndexFunc(cs, func(c *contract.Contract) bool { return c.Name == p.writeOffTool }); i >= 0 {
		return cs[i]
	}
	return nil
}

// admitted checks, before the form is shown, that the session is a person's holding the
// tool's role (else a refusal page) and stepped up as the tool demands (else the browser is
// sent to sign in again as it demands, and back); false: answered. When the form runs, Admin
// checks (and audits) all of it.
func (p *Pages) admitted(w http.ResponseWriter, r *http.Request, sess *signin.Session, c *contract.Contract, here string) bool {
	pr := sess.Principal
	if fe := pipeline.AdminAdmits(pr, c); fe != nil {
		p.refuse(w, r, http.StatusForbidden, fe)
		return false
	}
	if su, ok := p.admin.AdminStepUp(c.Name); ok {
		if err := auth.CheckStepUp(su, pr, p.now()); err != nil {
			http.Redirect(w, r, signin.SignInURL(here, &su), http.StatusSeeOther)
			return false
		}
	}
	return true
}

// showWriteOff serves GET /admin/write-offs: the form, with a fresh idempotency key.
func (p *Pages) showWriteOff(w http.ResponseWriter, r *http.Request) {
	c := p.writeOffContract()
	if c == nil {
		p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no such page"})
		return
	}
	d := newPage(r, func(t *texts) string { return t.WriteOffTitle })
	sess, ok := p.signedIn(w, r, d.Here)
	if !ok || !p.admitted(w, r, sess, c, d.Here) {
		return
	}
	d.Session, d.WriteOff, d.StepUp = sess, &writeOffForm{Key: newKey()}, stepUpText(p.admin, c.Name)
	d.Console = p.consoleHeader(r, d, nil)
	p.render(w, r, http.StatusOK, d)
}

// runWriteOff serves POST /admin/write-offs from the page's form (csrf, invoiceId,
// customerId, amountCents, reason, idempotencyKey): the signed-in person writes the invoice
// off through Admin, which checks the person, role and step-up and audits every refusal. A
// refusal shows the form again, filled as sent, under the refusal; a session no longer stepped
// up is sent to sign in again, and back to the form.
func (p *Pages) runWriteOff(w http.ResponseWriter, r *http.Request) {
	c := p.writeOffContract()
	if c == nil {
		p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no such page"})
		return
	}
	sess, ok := p.rp.CheckForm(w, r, "POST "+WriteOffsPath)
	if !ok {
		return
	}
	info := request.From(r.Context())
	info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
	d := newPage(r, func(t *texts) string { return t.WriteOffTitle })
	// Admin decides who may (and audits every refusal); the page only renders its answer.
	f := &writeOffForm{InvoiceID: r.PostFormValue("invoiceId"), CustomerID: r.PostFormValue("customerId"),
		AmountCents: r.PostFormValue("amountCents"), Reason: r.PostFormValue("reason"), Key: r.PostFormValue("idempotencyKey")}
	args, err := f.arguments()
	if err != nil {
		p.internal(w, r, err)
		return
	}
	// The page is cobranca's own client, acting for the signed-in person: it holds the tool's
	// scopes, and the person's role and step-up are what Admin decides on.
	pr := *sess.Principal
	pr.Scopes = append(slices.Clone(pr.Scopes), c.Permissions...)
	res := p.admin.Admin(r.Context(), pipeline.Call{Principal: &pr, RequestID: info.ID, Tool: c.Name, Args: args})
	d.Session, d.WriteOff, d.StepUp = sess, f, stepUpText(p.admin, c.Name)
	d.Console = p.consoleHeader(r, d, nil)
	switch res.Kind {
	case pipeline.Complete:
		var done writeoffs.Result
		if err := json.Unmarshal(res.Structured, &done); err != nil {
			p.internal(w, r, err)
			return
		}
		f.Done = &done
		p.render(w, r, http.StatusOK, d)
		return
	case pipeline.Denied: // the page holds the scopes: a contract changed under it
		p.internal(w, r, errors.New("write-off page: the tool denied the page's scopes"))
		return
	}
	if su, ok := errors.AsType[*auth.StepUpError](res.Err); ok {
		http.Redirect(w, r, signin.SignInURL(d.Here, &su.Required), http.StatusSeeOther)
		return
	}
	fe := res.Err
	if fe == nil {
		fe = &failure.Error{Code: failure.Internal, Message: "internal error (ref " + info.ID + ")"}
	}
	if fe.Code == failure.PersonRequired || fe.Code == failure.PersonLacksRole {
		d.WriteOff = nil // no form for who may not send it
	}
	d.Refusal = p.refusalOf(d, failure.HTTPStatus(fe.Code), fe)
	p.render(w, r, d.Refusal.Status, d)
}

// arguments are the tool's arguments the form says: the texts as typed, and the amount as a
// JSON integer when it is one (else as typed, a string, which the input schema refuses naming
// amountCents), so that every rule is the tool's.
func (f *writeOffForm) arguments() (json.RawMessage, error) {
	var amount any = f.AmountCents
	if n, err := strconv.ParseInt(f.AmountCents, 10, 64); err == nil {
		amount = n
	}
	return json.Marshal(map[string]any{"invoiceId": f.InvoiceID, "customerId": f.CustomerID, "amountCents": amount,
		"reason": f.Reason, "idempotencyKey": f.Key})
}

// newKey is a form's idempotency key: one per form shown, so that a form sent twice (a double
// click, a resend after a lost answer) records one write-off and answers it twice.
func newKey() string { return ident.New("form_") }

func stepUpText(a Admin, name string) string {
	if su, ok := a.AdminStepUp(name); ok {
		return su.Message()
	}
	return ""
}

// now is the pages' clock.
func (p *Pages) now() time.Time {
	if p.clock != nil {
		return p.clock()
	}
	return time.Now()
}
