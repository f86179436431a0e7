package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/signin"
)

// The ledger's console pages: the invoices, one invoice, the unmatched payments, and the
// form that matches a payment to an invoice (POST).
const (
	LedgerPath   = "/console/ledger"
	InvoicePath  = "/console/ledger/invoice" // ?id=
	PaymentsPath = "/console/payments"
	PaymentPath  = "/console/payments/payment" // ?id=
	MatchPath    = "/console/payments/match"
)

// Runner runs the tools served over MCP for the console's forms (pipeline.Pipeline): a form
// is a call of the tool, audited and budgeted as the tool's contract says.
type Runner interface {
	Do(ctx context.Context, c pipeline.Call) pipeline.Result
	Contracts() []*contract.Contract
}

// The ledger pages' sizes.
const (
	ledgerPageSize   = 50
	paymentsPageSize = 20
	// paymentsCandidates: the candidates each payment shows on the payments page, the best
	// first; the payment's own page shows all of them. Every one is a form: 20 payments with
	// all their candidates made the page's rendering cost 100 ms (docs/benchmarks.md).
	paymentsCandidates = 3
	maxIDLength        = 200
)

// ledgerFilter is the invoices page's filter as the reader wrote it.
type ledgerFilter struct {
	Customer, Overdue, Disputed string
	States                      []string
	Promise                     bool
}

type stateOption struct {
	Value    ledger.State
	Selected bool
}

type ledgerRow struct {
	ledger.StoredInvoice
	Href           string
	Overdue        bool
	PromisePending bool
}

type ledgerView struct {
	Filter       ledgerFilter
	StateOptions []stateOption
	Invoices     []ledgerRow
	Next, First  string
}

// ledgerPages are the ledger's console pages: the invoices, an invoice (not in the
// navigation) and the payments left to match.
func (p *Pages) ledgerPages() []*consolePage {
	return []*consolePage{
		{path: LedgerPath, file: "console_ledger.html", name: func(t *texts) string { return t.Ledger.Title }, read: p.readLedger},
		{path: InvoicePath, file: "console_invoice.html", name: func(t *texts) string { return t.Ledger.InvoiceTitle }, read: p.readInvoice, under: LedgerPath},
		{path: PaymentsPath, file: "console_payments.html", name: func(t *texts) string { return t.Ledger.PaymentsTitle }, read: p.readPayments},
		{path: PaymentPath, file: "console_payments.html", name: func(t *texts) string { return t.Ledger.PaymentTitle }, read: p.readPayment, under: PaymentsPath},
	}
}

// today is the ledger's day now (UTC, as the tools read it).
func (p *Pages) today() string { return p.now().UTC().Format(time.DateOnly) }

func queryParam(field, msg string) *failure.Error {
	return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
}

// parseLedgerFilter reads the invoices page's query: ?customer= ?state= (repeated)
// ?overdue= (days) ?disputed=yes|no ?promise=1 ?after= (the next page's cursor, which
// ledger.ListInvoices checks); a bad one is refused naming it.
func parseLedgerFilter(q url.Values, today string) (ledger.ListFilter, ledgerFilter, *failure.Error) {
	lf := ledgerFilter{Customer: q.Get("customer"), Overdue: q.Get("overdue"), Disputed: q.Get("disputed"), States: q["state"]}
	f := ledger.ListFilter{CustomerID: lf.Customer, Today: today, After: q.Get("after"), Limit: ledgerPageSize}
	if len(f.CustomerID) > maxIDLength {
		return f, lf, queryParam("customer", "must be a customer id of at most "+strconv.Itoa(maxIDLength)+" characters")
	}
	for _, s := range lf.States {
		if !slices.Contains(ledger.States, ledger.State(s)) {
			return f, lf, queryParam("state", "must each be one of open, partially_paid, paid, void, written_off")
		}
		f.States = append(f.States, ledger.State(s))
	}
	if lf.Overdue != "" {
		n, err := strconv.Atoi(lf.Overdue)
		if err != nil || n < 0 || n > 36500 {
			return f, lf, queryParam("overdue", "must be a number of days from 0 to 36500")
		}
		f.MinDaysOverdue = n
	}
	switch lf.Disputed {
	case "":
	case "yes", "no":
		disputed := lf.Disputed == "yes"
		f.Disputed = &disputed
	default:
		return f, lf, queryParam("disputed", `must be "yes" or "no"`)
	}
	switch q.Get("promise") {
	case "":
	case "1":
		f.PromisePending, lf.Promise = true, true
	default:
		return f, lf, queryParam("promise", `must be "1" (only invoices under a promise to pay)`)
	}
	return f, lf, nil
}

// readLedger reads the invoices page (parseLedgerFilter), 50 invoices at a time.
func (p *Pages) readLedger(ctx context.Context, r *http.Request, d *pageData) error {
	q := r.URL.Query()
	f, lf, fe := parseLedgerFilter(q, p.today())
	if fe != nil {
		return fe
	}
	v := &ledgerView{Filter: lf}
	for _, s := range ledger.States {
		v.StateOptions = append(v.StateOptions, stateOption{Value: s, Selected: slices.Contains(f.States, s)})
	}
	page, next, err := ledger.ListInvoices(ctx, p.decider.DB, f)
	if err != nil {
		return err // a bad cursor is a *failure.Error naming after
	}
	for _, inv := range page {
		v.Invoices = append(v.Invoices, ledgerRow{StoredInvoice: inv, Href: linkWith(r, InvoicePath, url.Values{"id": {inv.InvoiceID}}),
			Overdue: !inv.State.Settled() && inv.DueDate < f.Today, PromisePending: inv.PromisePending(f.Today)})
	}
	if next != "" {
		nq := cloneQuery(q)
		nq.Set("after", next)
		v.Next = pageLink(r, nq)
	}
	if f.After != "" {
		fq := cloneQuery(q)
		fq.Del("after")
		v.First = pageLink(r, fq)
	}
	d.View = v
	return nil
}

// cloneQuery is q without lang (pageLink adds the reader's).
func cloneQuery(q url.Values) url.Values {
	out := url.Values{}
	for k, vs := range q {
		if k != "lang" {
			out[k] = slices.Clone(vs)
		}
	}
	return out
}

// withLang is path with the reader's chosen language, when chosen.
func withLang(r *http.Request, path string) string {
	if lang := r.URL.Query().Get("lang"); lang != "" {
		return path + "?" + url.Values{"lang": {lang}}.Encode()
	}
	return path
}

// linkWith is path with q and the reader's chosen language.
func linkWith(r *http.Request, path string, q url.Values) string {
	if lang := r.URL.Query().Get("lang"); lang != "" {
		q.Set("lang", lang)
	}
	return path + "?" + q.Encode()
}

type invoiceView struct {
	reminders.InvoiceView
	Overdue, PromisePending bool
	// Bodies: the reader may read messages to customers (their subjects here).
	Bodies bool
}

// readInvoice reads an invoice (?id=) with its allocations, promise, dispute and contacts.
func (p *Pages) readInvoice(ctx context.Context, r *http.Request, d *pageData) error {
	id := r.URL.Query().Get("id")
	if id == "" || len(id) > maxIDLength {
		return queryParam("id", "must be an invoice id of 1 to "+strconv.Itoa(maxIDLength)+" characters")
	}
	view, err := reminders.ReadInvoice(ctx, p.decider.DB, id)
	if errors.Is(err, ledger.ErrInvoiceNotFound) {
		return &failure.Error{Code: codeNotFound, Field: "id", Message: "names no invoice in the ledger"}
	}
	if err != nil {
		return err
	}
	today := p.today()
	d.View = &invoiceView{InvoiceView: view, Overdue: !view.Invoice.State.Settled() && view.Invoice.DueDate < today,
		PromisePending: view.Invoice.PromisePending(today), Bodies: may(d.Session.Principal, readBodies)}
	return nil
}

type suggestionRow struct {
	ledger.Suggestion
	PaymentID, Href string
	// Key is the match form's idempotency key: one per form shown.
	Key string
}

type paymentRow struct {
	ledger.StoredPayment
	Suggestions []suggestionRow
	// More: its customer has more candidates than Suggest read (its own page says so).
	// Others: how many candidates are not shown here ("47", or "47+" with More), on the
	// payment's own page (Href).
	More         bool
	Others, Href string
}

type paymentsView struct {
	Payments    []paymentRow
	Next, First string
	// One: the page of one payment (PaymentPath), with all its candidates; Back leads to the
	// payments.
	One  bool
	Back string
	// MayMatch: the reader may match payments (the form checks it again); MatchAction is
	// the form's action.
	MayMatch    bool
	MatchAction string
}

// readPayments reads the payments with something left, oldest first (?after=), each with
// the best few invoices it may be matched to in one click.
func (p *Pages) readPayments(ctx context.Context, r *http.Request, d *pageData) error {
	after := r.URL.Query().Get("after")
	page, next, err := ledger.ListUnmatched(ctx, p.decider.DB, after, paymentsPageSize)
	if err != nil {
		return err
	}
	v, err := p.paymentsView(ctx, r, d, page, paymentsCandidates)
	if err != nil {
		return err
	}
	if next != "" {
		v.Next = pageLink(r, url.Values{"after": {next}})
	}
	if after != "" {
		v.First = pageLink(r, nil)
	}
	d.View = v
	return nil
}

// readPayment reads a payment (?id=) with every invoice it may be matched to in one click.
func (p *Pages) readPayment(ctx context.Context, r *http.Request, d *pageData) error {
	id := r.URL.Query().Get("id")
	if id == "" || len(id) > maxIDLength {
		return queryParam("id", "must be a payment id of 1 to "+strconv.Itoa(maxIDLength)+" characters")
	}
	pay, err := ledger.GetPayment(ctx, p.decider.DB, id)
	if errors.Is(err, ledger.ErrPaymentNotFound) {
		return &failure.Error{Code: codeNotFound, Field: "id", Message: "names no payment in the ledger"}
	}
	if err != nil {
		return err
	}
	v, err := p.paymentsView(ctx, r, d, []ledger.StoredPayment{pay}, 0)
	if err != nil {
		return err
	}
	v.One, v.Back = true, withLang(r, PaymentsPath)
	d.View = v
	return nil
}

// paymentsView is the payments, each with the first shown (0: all) of the invoices Suggest
// offers it, in its order (the reference's, then the amount fits), and a link to the rest.
func (p *Pages) paymentsView(ctx context.Context, r *http.Request, d *pageData, payments []ledger.StoredPayment, shown int) (*paymentsView, error) {
	offers, err := ledger.Suggest(ctx, p.decider.DB, payments)
	if err != nil {
		return nil, err
	}
	v := &paymentsView{MayMatch: p.runner != nil && p.matchTool != "" && may(d.Session.Principal, matchPayments),
		MatchAction: withLang(r, MatchPath)}
	for i, pay := range payments {
		o := offers[i]
		row := paymentRow{StoredPayment: pay, More: o.More}
		if shown > 0 && (len(o.Suggestions) > shown || o.More) {
			n := max(len(o.Suggestions)-shown, 0)
			row.Others, row.Href = strconv.Itoa(n), linkWith(r, PaymentPath, url.Values{"id": {pay.ID}})
			if o.More {
				row.Others += "+"
			}
			o.Suggestions = o.Suggestions[:min(shown, len(o.Suggestions))]
		}
		for _, s := range o.Suggestions {
			sr := suggestionRow{Suggestion: s, PaymentID: pay.ID, Href: linkWith(r, InvoicePath, url.Values{"id": {s.Invoice.InvoiceID}})}
			if v.MayMatch {
				sr.Key = newKey()
			}
			row.Suggestions = append(row.Suggestions, sr)
		}
		v.Payments = append(v.Payments, row)
	}
	return v, nil
}

// matchContract is the contract of the tool the match form runs, nil when not served.
func (p *Pages) matchContract() *contract.Contract { return p.servedContract(p.matchTool) }

// runMatch serves POST /console/payments/match (csrf, paymentId, invoiceId, amountCents,
// idempotencyKey): an operator allocates the payment to the invoice through the pipeline,
// as the match_payment tool (audited, budgeted); then the invoice's page shows what it
// became. Anyone else is refused (403), and the refusal audited.
func (p *Pages) runMatch(w http.ResponseWriter, r *http.Request) {
	c := p.matchContract()
	if c == nil {
		p.refuse(w, r, http.StatusNotFound, &failure.Error{Code: codeNotFound, Message: "no such page"})
		return
	}
	sess, ok := p.rp.CheckForm(w, r, "POST "+MatchPath)
	if !ok {
		return
	}
	info := request.From(r.Context())
	info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
	pr := sess.Principal
	if !may(pr, matchPayments) {
		fe := &failure.Error{Code: CodeOperatorRequired, Message: "matching a payment needs the role " + RoleOperator}
		if pr.IsAgent() {
			fe = &failure.Error{Code: CodeConsoleAgent, Message: "an agent's session sees nothing of the console: sign in as a person"}
		}
		if p.refusals != nil {
			p.refusals.Refused(r, auditlog.Event{Name: EventConsoleRefused, Tool: "POST " + MatchPath, RequestID: info.ID,
				Outcome: auditlog.Denied, FailureCode: string(fe.Code)})
		}
		p.refuse(w, r, http.StatusForbidden, fe)
		return
	}
	invoiceID := r.PostFormValue("invoiceId")
	var amount any = r.PostFormValue("amountCents")
	if n, err := strconv.ParseInt(amount.(string), 10, 64); err == nil {
		amount = n // else the string, which the input schema refuses naming the field
	}
	args, err := json.Marshal(map[string]any{"paymentId": r.PostFormValue("paymentId"),
		"allocations":    []map[string]any{{"invoiceId": invoiceID, "amountCents": amount}},
		"idempotencyKey": r.PostFormValue("idempotencyKey")})
	if err != nil {
		p.internal(w, r, err)
		return
	}
	// The console is cobranca's own client acting for the operator: it holds the tool's
	// scopes; the operator's role is what the page decided on, above.
	caller := *pr
	caller.Scopes = append(slices.Clone(pr.Scopes), c.Permissions...)
	res := p.runner.Do(r.Context(), pipeline.Call{Principal: &caller, RequestID: info.ID, Tool: c.Name, Args: args})
	d := newPage(r, func(t *texts) string { return t.Ledger.PaymentsTitle })
	switch res.Kind {
	case pipeline.Complete:
		http.Redirect(w, r, linkWith(r, InvoicePath, url.Values{"id": {invoiceID}}), http.StatusSeeOther)
		return
	case pipeline.Denied:
		p.internal(w, r, errors.New("match page: the tool denied the page's scopes"))
		return
	}
	if su, ok := errors.AsType[*auth.StepUpError](res.Err); ok {
		http.Redirect(w, r, signin.SignInURL(withLang(r, PaymentsPath), &su.Required), http.StatusSeeOther)
		return
	}
	fe := res.Err
	if fe == nil {
		fe = &failure.Error{Code: failure.Internal, Message: "internal error (ref " + info.ID + ")"}
	}
	d.Session = sess
	d.Refusal = p.refusalOf(d, failure.HTTPStatus(fe.Code), fe)
	d.Refusal.Back, d.Refusal.BackText = withLang(r, PaymentsPath), d.T.Ledger.BackToPayments
	p.render(w, r, d.Refusal.Status, d)
}
