package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/reminders"
)

// The customers and outbox pages' sizes and reach.
const (
	customersPageSize = 50
	draftsPageSize    = 25
	sendsShown        = 25
	outboxPageSize    = 50
	bulksPageSize     = 10
	// depthCap bounds the outbox's depth the page counts (outbox.ReadDepth's limit): more
	// reads as "at least" it, at a bounded cost however many wait.
	depthCap = 10_000
)

// customerRow is a customer as the customers page lists it.
type customerRow struct {
	customers.Customer
	// InEffect is the status in effect today (a pause that ended is contactable again), Ended
	// the day that pause ended ("" when none did).
	InEffect customers.Status
	Ended    string
	Href     string
}

type customersView struct {
	Rows []customerRow
	// Status is the filter chosen ("" every status); Statuses, the choices.
	Status   customers.Status
	Statuses []customers.Status
	// LangTag is the chosen language to keep in the filter's form ("" none chosen).
	LangTag     string
	Next, First string
}

// readCustomers reads the customers page: a page of customers in id order (?after= the last
// one's id), with their contact status and who set it, when and why, of one status or all
// (?status=).
func (p *Pages) readCustomers(ctx context.Context, r *http.Request, d *pageData) error {
	q := r.URL.Query()
	status := customers.Status(q.Get("status"))
	if status != "" && !status.Valid() {
		return badParam("status", "must be one of contactable, paused, do_not_contact, or empty for every status")
	}
	after := q.Get("after")
	if after != "" && customers.IDProblem(after) != "" {
		return badParam("after", "must be a place in the list, as the page's own link writes it")
	}
	page, next, err := customers.List(ctx, p.customers, customers.ListFilter{Status: status, After: after, Limit: customersPageSize})
	if err != nil {
		return err
	}
	v := &customersView{Status: status, Statuses: customers.Statuses(), LangTag: q.Get("lang")}
	keep := url.Values{}
	if status != "" {
		keep.Set("status", string(status))
	}
	if next != "" {
		v.Next = pageLink(r, with(keep, "after", next))
	}
	if after != "" {
		v.First = pageLink(r, keep)
	}
	today := p.now().In(brasilia).Format(customers.DateLayout)
	for _, c := range page {
		row := customerRow{Customer: c, Href: customerLink(r, c.ID)}
		row.InEffect, row.Ended = c.InEffect(today)
		v.Rows = append(v.Rows, row)
	}
	d.View = v
	return nil
}

// keepQuery keeps r's query in page d's own links — the way back from sign-in, the sign-out's
// return and the language switch — so that a console page that reads its query (a customer's
// ?id=, a list's ?after=) comes back as it was; ?lang= is the language chosen (newPage's).
func keepQuery(r *http.Request, d *pageData) {
	q := r.URL.Query()
	q.Del("lang")
	if len(q) == 0 {
		return
	}
	here := url.Values{}
	for k, vs := range q {
		here[k] = vs
	}
	if r.URL.Query().Get("lang") != "" {
		here.Set("lang", d.Lang)
	}
	d.Here = r.URL.Path + "?" + here.Encode()
	for i := range d.Langs {
		d.Langs[i].Href = r.URL.Path + "?" + with(q, "lang", d.Langs[i].Tag).Encode()
	}
}

// with is a copy of q with key set to value.
func with(q url.Values, key, value string) url.Values {
	out := url.Values{}
	for k, vs := range q {
		out[k] = vs
	}
	out.Set(key, value)
	return out
}

// badParam is the refusal of a query parameter the page cannot read, naming it.
func badParam(field, msg string) error {
	return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
}

// messageRow is a draft or a send as the pages list it: its body only for who may read it.
type messageRow struct {
	reminders.Record
	// Body is the message's text for a reader who may read bodies (readBodies), else "".
	Body string
	// CustomerHref is the customer's page (on the outbox page).
	CustomerHref string
	// InvoicesN is how many invoices the message is about.
	InvoicesN int64
}

// Amount is cents of currency (ISO 4217) as the reader writes it: Money's, with the currency's
// code for another currency than the real's.
func (t *texts) Amount(cents int64, currency string) string {
	if currency == "" || currency == "BRL" {
		return t.Money(cents)
	}
	return strings.Replace(t.Money(cents), "R$", currency, 1)
}

type customerView struct {
	Customer customers.Customer
	InEffect customers.Status
	Ended    string
	// Drafts are the customer's drafts in every state, the latest first, a page at a time;
	// Sends the latest of them sent (queued, sent, undeliverable).
	Drafts, Sends []messageRow
	// MayReadBodies: the reader may read the messages' bodies; else the page says why it
	// shows none.
	MayReadBodies bool
	Next, First   string
	Back          string
}

// readCustomer reads a customer's page (?id=): its contact status, its drafts (?after= the
// last one's place) and its latest sends; the messages' bodies only for a reader who may read
// them (not collections.viewer).
func (p *Pages) readCustomer(ctx context.Context, r *http.Request, d *pageData) error {
	q := r.URL.Query()
	id := q.Get("id")
	if id == "" {
		return badParam("id", "is required: the customer's id")
	}
	if pr := customers.IDProblem(id); pr != "" {
		return badParam("id", pr)
	}
	after, err := parsePosition(q.Get("after"), "after", reminders.ValidID)
	if err != nil {
		return err
	}
	c, err := customers.Get(ctx, p.customers, id)
	if errors.Is(err, customers.ErrNotFound) {
		return &failure.Error{Code: customers.CodeNotFound, Field: "id", Message: "names no customer"}
	}
	if err != nil {
		return err
	}
	f := reminders.Filter{CustomerID: id, Limit: draftsPageSize + 1}
	if after != nil {
		f.After = &reminders.Position{CreatedAt: after.at, ID: after.id}
	}
	drafts, err := reminders.List(ctx, p.customers, f)
	if err != nil {
		return err
	}
	sends, err := reminders.Sends(ctx, p.customers, id, sendsShown)
	if err != nil {
		return err
	}
	bodies := may(d.Session.Principal, readBodies)
	v := &customerView{Customer: c, MayReadBodies: bodies, Back: pageLink(&http.Request{URL: &url.URL{Path: CustomersPath, RawQuery: r.URL.RawQuery}}, nil)}
	v.InEffect, v.Ended = c.InEffect(p.now().In(brasilia).Format(customers.DateLayout))
	keep := url.Values{"id": {id}}
	if len(drafts) > draftsPageSize {
		drafts = drafts[:draftsPageSize]
		last := reminders.PositionOf(drafts[len(drafts)-1])
		v.Next = pageLink(r, with(keep, "after", formatPosition(last.CreatedAt, last.ID)))
	}
	if after != nil {
		v.First = pageLink(r, keep)
	}
	v.Drafts, v.Sends = messageRows(drafts, bodies), messageRows(sends, bodies)
	d.View = v
	return nil
}

// messageRows are recs as a page lists them, with their bodies only when bodies.
func messageRows(recs []reminders.Record, bodies bool) []messageRow {
	out := make([]messageRow, 0, len(recs))
	for _, rec := range recs {
		row := messageRow{Record: rec, InvoicesN: int64(rec.InvoiceCount)}
		// The record's own copies go too: the template reads Body, never Record.Body.
		row.Record.Body, row.Record.HTML = "", ""
		if bodies {
			row.Body = rec.Body
		}
		out = append(out, row)
	}
	return out
}

// A position is a place in a list ordered by a time and an id, written
// <microseconds since 1970>.<id>, as the pages' own links write it.
type position struct {
	at int64
	id string
}

func formatPosition(us int64, id string) string { return strconv.FormatInt(us, 10) + "." + id }

// parsePosition reads a position from query parameter field ("" is the first page: nil);
// validID checks its id's shape.
func parsePosition(s, field string, validID func(string) bool) (*position, error) {
	if s == "" {
		return nil, nil
	}
	us, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || n < 0 || strconv.FormatInt(n, 10) != us || !validID(id) {
		return nil, badParam(field, "must be a place in the list, as the page's own link writes it")
	}
	return &position{at: n, id: id}, nil
}

// outboxTab is one of the outbox page's tabs: the sent drafts in one state.
type outboxTab struct {
	State   reminders.State
	Href    string
	Current bool
}

type outboxView struct {
	Tabs  []outboxTab
	State reminders.State
	Rows  []messageRow
	// Next, First: the pages of the tab's list.
	Next, First string
	Bulks       []bulkRow
	// BulksNext, BulksFirst: the pages of the bulk sends.
	BulksNext, BulksFirst string
	Depth                 outbox.Depth
	// DepthCapped: the outbox holds at least Depth.Queued (the count stopped there).
	DepthCapped bool
}

// bulkRow is a bulk send with its progress: Done of Total delivered or given up on.
type bulkRow struct {
	reminders.BulkStatus
	Done int
}

// The outbox page's query parameters.
const (
	outboxState = "state" // the tab: queued (default), sent, undeliverable
	outboxAfter = "after" // the tab's place
	bulksAfter  = "bulks" // the bulk sends' place
)

// readOutbox reads the outbox page: the sent drafts of one state (?state=, queued by
// default) the latest queued first with the mail server's reply for those refused, a page at
// a time (?after=); the bulk sends with their progress (?bulks=); and the outbox's depth.
func (p *Pages) readOutbox(ctx context.Context, r *http.Request, d *pageData) error {
	q := r.URL.Query()
	state := reminders.State(q.Get(outboxState))
	switch state {
	case "":
		state = reminders.Queued
	case reminders.Queued, reminders.Sent, reminders.Undeliverable:
	default:
		return badParam(outboxState, "must be one of queued, sent, undeliverable")
	}
	after, err := parsePosition(q.Get(outboxAfter), outboxAfter, reminders.ValidID)
	if err != nil {
		return err
	}
	bulksAt, err := parsePosition(q.Get(bulksAfter), bulksAfter, reminders.ValidBulkID)
	if err != nil {
		return err
	}
	f := reminders.SendingFilter{State: state, Limit: outboxPageSize}
	if after != nil {
		f.After = &reminders.SendingPosition{QueuedAt: after.at, ID: after.id}
	}
	rows, next, err := reminders.ListSending(ctx, p.outbox, f)
	if err != nil {
		return err
	}
	var bp *reminders.BulkPosition
	if bulksAt != nil {
		bp = &reminders.BulkPosition{CreatedAt: bulksAt.at, ID: bulksAt.id}
	}
	bulks, bulksNext, err := reminders.ListBulks(ctx, p.outbox, bp, bulksPageSize)
	if err != nil {
		return err
	}
	depth, err := outbox.ReadDepth(ctx, p.outbox, depthCap)
	if err != nil {
		return err
	}
	v := &outboxView{State: state, Rows: messageRows(rows, false), Depth: depth, DepthCapped: depth.Queued >= depthCap}
	for i := range v.Rows {
		v.Rows[i].CustomerHref = customerLink(r, v.Rows[i].CustomerID)
	}
	for _, s := range []reminders.State{reminders.Queued, reminders.Sent, reminders.Undeliverable} {
		v.Tabs = append(v.Tabs, outboxTab{State: s, Current: s == state, Href: pageLink(r, url.Values{outboxState: {string(s)}})})
	}
	tab := url.Values{outboxState: {string(state)}}
	if next != nil {
		v.Next = pageLink(r, with(tab, outboxAfter, formatPosition(next.QueuedAt, next.ID)))
	}
	if after != nil {
		v.First = pageLink(r, tab)
	}
	if bulksNext != nil {
		v.BulksNext = pageLink(r, with(tab, bulksAfter, formatPosition(bulksNext.CreatedAt, bulksNext.ID))) + "#bulks"
	}
	if bulksAt != nil {
		v.BulksFirst = pageLink(r, tab) + "#bulks"
	}
	for _, b := range bulks {
		v.Bulks = append(v.Bulks, bulkRow{BulkStatus: b, Done: b.Sent + b.Undeliverable})
	}
	d.View = v
	return nil
}

// customerLink is the customer page of id, in the reader's chosen language.
func customerLink(r *http.Request, id string) string {
	return pageLink(&http.Request{URL: &url.URL{Path: CustomerPath, RawQuery: r.URL.RawQuery}}, url.Values{"id": {id}})
}
