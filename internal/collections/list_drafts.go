package collections

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/google/jsonschema-go/jsonschema"
)

// ListDraftsName is the name of the read of reminder drafts.
const ListDraftsName = "collections.list_drafts"

// The page sizes of list_drafts.
const (
	defaultDraftsLimit = 20
	maxDraftsLimit     = 100
)

// listDraftsDecode reads list_drafts' arguments.
func listDraftsDecode(b []byte) (any, int, error) { return checked(b, (*listDraftsArgs).check) }

func listDraftsContract() contract.Contract {
	return contract.Contract{
		Name:            ListDraftsName,
		ContractVersion: "1.1.0",
		Title:           "List reminder drafts",
		Description: "Use to see which reminder drafts exist: newest first, optionally for one customer and in one state, " +
			"a page at a time (pass nextCursor back as cursor for the next page). Items carry the subject and totals, " +
			"never the body. Read-only.",
		Category:     "collections",
		RiskLevel:    contract.Low,
		InputSchema:  listDraftsInputSchema(),
		OutputSchema: listDraftsOutputSchema(),
		Permissions:  []string{"collections:read"},
		SideEffects: contract.SideEffects{
			Changes:  []string{},
			OnRepeat: "Nothing changes; a repeat lists the drafts as they are then (new drafts come before the first page).",
		},
		AuditEvent: "collections.drafts.listed",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, customerId breaks the text rule, or cursor is not one this tool gave for the same customerId and state; field names it."},
		},
		Idempotency: contract.Idempotency{Kind: "inherent", Description: "Read-only: repeating a call has no effect."},
		DryRun:      contract.ModeNone,
	}
}

// listDraftsArgs are list_drafts' arguments; every one is optional.
type listDraftsArgs struct {
	CustomerID *string `json:"customerId,omitempty"`
	State      *string `json:"state,omitempty"`
	Limit      *int    `json:"limit,omitempty"`
	Cursor     *string `json:"cursor,omitempty"`

	filter reminders.Filter // made by check
}

// check does what the input schema cannot: the whole text rule, and the cursor.
func (a *listDraftsArgs) check() error {
	a.filter = reminders.Filter{Limit: defaultDraftsLimit}
	if a.CustomerID != nil {
		if p := customers.IDProblem(*a.CustomerID); p != "" {
			return &failure.Error{Code: failure.InvalidArguments, Field: "customerId", Message: p}
		}
		a.filter.CustomerID = *a.CustomerID
	}
	if a.State != nil {
		a.filter.State = reminders.State(*a.State) // the schema's enum held it to the states
	}
	if a.Limit != nil {
		a.filter.Limit = *a.Limit
	}
	if a.Cursor != nil {
		pos, ok := openCursor(*a.Cursor, a.filter)
		if !ok {
			return &failure.Error{Code: failure.InvalidArguments, Field: "cursor",
				Message: "is not a cursor this tool gave for the same customerId and state: pass nextCursor back as it came, with the same filters, or leave cursor out for the first page"}
		}
		a.filter.After = &pos
	}
	return nil
}

// listDraftsResult is list_drafts' answer.
type listDraftsResult struct {
	Drafts     []draftItem `json:"drafts"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// draftItem is one draft as listed: no body.
type draftItem struct {
	ID           string `json:"id"`
	CustomerID   string `json:"customerId"`
	State        string `json:"state"`
	Tone         string `json:"tone"`
	Language     string `json:"language"`
	Subject      string `json:"subject"`
	InvoiceCount int    `json:"invoiceCount"`
	TotalCents   int64  `json:"totalCents"`
	Currency     string `json:"currency"`
	PixTxID      string `json:"pixTxid"`
	CreatedAt    string `json:"createdAt"`
	sending
}

// sending is what a listing shows of a sent draft (queued, sent, undeliverable): its message and
// how delivery went; absent before.
type sending struct {
	MessageID     string `json:"messageId,omitempty"`
	QueuedAt      string `json:"queuedAt,omitempty"`
	SentAt        string `json:"sentAt,omitempty"`
	FailedAt      string `json:"failedAt,omitempty"`
	FailureReason string `json:"failureReason,omitempty"`
}

// sendingOf is what a listing shows of r's sending (zero before it was sent).
func sendingOf(r reminders.Record) sending {
	s := r.Sending
	if s == nil {
		return sending{}
	}
	out := sending{MessageID: s.MessageID, QueuedAt: s.QueuedAt.Format(time.RFC3339Nano), FailureReason: s.FailureReason}
	if !s.DeliveredAt.IsZero() {
		out.SentAt = s.DeliveredAt.Format(time.RFC3339Nano)
	}
	if !s.FailedAt.IsZero() {
		out.FailedAt = s.FailedAt.Format(time.RFC3339Nano)
	}
	return out
}

// sendingFields are the fields of a sent draft, in a listing's item: messageId and queuedAt
// (from queued on), then sentAt, failedAt and failureReason as delivery ends.
var sendingFields = []string{"messageId", "queuedAt", "sentAt", "failedAt", "failureReason"}

// sendingRules describes the sendingFields of item, an object schema closeObject made: optional,
// each with prefix, except those the caller keeps required.
func sendingRules(item *jsonschema.Schema, prefix string, required ...string) {
	item.Required = slices.DeleteFunc(item.Required, func(n string) bool {
		return slices.Contains(sendingFields, n) && !slices.Contains(required, n)
	})
	p := item.Properties
	p["messageId"].Pattern = messageIDPattern
	p["messageId"].Description = prefix + messageIDText
	for name, what := range map[string]string{"queuedAt": "queued", "sentAt": "accepted by the mail server (state sent)", "failedAt": "refused for good (state undeliverable)"} {
		p[name].Format = "date-time"
		p[name].Description = prefix + "When the draft's message was " + what + " (RFC 3339, UTC)."
	}
	p["failureReason"].Description = prefix + "With state undeliverable: why the mail server refused the message (its reply code, never the recipient)."
}

// listDrafts reads one page: a row more than the page, to know whether another follows.
func listDrafts(ctx context.Context, q store.Querier, v any) (pipeline.Effect, error) {
	a := v.(*listDraftsArgs)
	f := a.filter
	f.Limit++
	recs, err := reminders.List(ctx, q, f)
	if err != nil {
		return pipeline.Effect{}, err
	}
	out := listDraftsResult{Drafts: make([]draftItem, 0, min(len(recs), a.filter.Limit))}
	for i, r := range recs {
		if i == a.filter.Limit {
			if out.NextCursor, err = sealCursor(reminders.PositionOf(recs[i-1]), a.filter); err != nil {
				return pipeline.Effect{}, err
			}
			break
		}
		out.Drafts = append(out.Drafts, draftItem{
			ID: r.ID, CustomerID: r.CustomerID, State: string(r.State), Tone: string(r.Tone), Language: string(r.Language),
			Subject: r.Subject, InvoiceCount: r.InvoiceCount, TotalCents: r.TotalCents, Currency: draftCurrency(r), PixTxID: pixTxID(r),
			CreatedAt: r.CreatedAt.Format(time.RFC3339Nano), sending: sendingOf(r),
		})
	}
	summary := fmt.Sprintf("%d reminder draft(s) listed", len(out.Drafts))
	if out.NextCursor != "" {
		summary += "; more follow: pass nextCursor as cursor"
	}
	return pipeline.Effect{
		Structured: &out,
		Summary:    summary + ".",
		Details:    map[string]int64{"draftCount": int64(len(out.Drafts))},
	}, nil
}

// A cursor is where the next page starts, bound to the filters of the listing it came from:
// base64url (no padding) of a version byte, the first 8 bytes of the SHA-256 of the filters,
// the position's creation time (microseconds, big-endian) and the 16 bytes of its draft id (ident).
// It opens only for the same customerId and state, and only in exactly the form it was
// written. It is not secret and not signed: a caller who forges one for a position of its
// own choosing lists the same drafts it may list anyway, from another place.
const (
	cursorVersion = 1
	cursorBytes   = 1 + 8 + 8 + ident.Size
	// cursorLen is the length of a cursor as text.
	cursorLen = (cursorBytes*8 + 5) / 6
)

var cursorEncoding = base64.RawURLEncoding.Strict()

// filterDigest names the filters a cursor belongs to.
func filterDigest(f reminders.Filter) []byte {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(f.CustomerID)) + ":" + f.CustomerID + string(f.State)))
	return h.Sum(nil)[:8]
}

func sealCursor(p reminders.Position, f reminders.Filter) (string, error) {
	if !reminders.ValidID(p.ID) || p.CreatedAt < 0 {
		return "", errors.New("collections: a stored draft has an id or creation time reminders never makes")
	}
	id, _ := ident.Decode(reminders.IDPrefix, p.ID)
	b := make([]byte, 0, cursorBytes)
	b = append(b, cursorVersion)
	b = append(b, filterDigest(f)...)
	b = binary.BigEndian.AppendUint64(b, uint64(p.CreatedAt))
	return cursorEncoding.EncodeToString(append(b, id[:]...)), nil
}

// openCursor reads a cursor sealCursor wrote for the same filters.
func openCursor(s string, f reminders.Filter) (reminders.Position, bool) {
	if len(s) != cursorLen {
		return reminders.Position{}, false
	}
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) != cursorBytes || b[0] != cursorVersion || !bytes.Equal(b[1:9], filterDigest(f)) {
		return reminders.Position{}, false
	}
	at := binary.BigEndian.Uint64(b[9:17])
	if at > math.MaxInt64 {
		return reminders.Position{}, false
	}
	return reminders.Position{CreatedAt: int64(at), ID: ident.Encode(reminders.IDPrefix, [ident.Size]byte(b[17:]))}, true
}

func listDraftsInputSchema() *jsonschema.Schema {
	s := mustFor[listDraftsArgs]()
	closeObject(s)
	s.Required = nil
	s.Description = "Which drafts to list; every argument is optional."
	s.Properties["customerId"] = customerIDSchema()
	s.Properties["customerId"].Description = "Only the drafts of this customer. " + s.Properties["customerId"].Description
	noNull(s, "customerId", "state", "limit", "cursor")
	st := s.Properties["state"]
	st.Enum = enum(reminders.States())
	st.Description = "Only the drafts in this state: " + draftStatesText + "."
	lim := s.Properties["limit"]
	lim.Type = "integer"
	lim.Minimum, lim.Maximum = ptr(1.0), ptr(float64(maxDraftsLimit))
	lim.Default = json.RawMessage(strconv.Itoa(defaultDraftsLimit))
	lim.Description = fmt.Sprintf("Drafts per page, 1 to %d; %d when left out.", maxDraftsLimit, defaultDraftsLimit)
	cur := s.Properties["cursor"]
	cur.MinLength, cur.MaxLength = ptr(cursorLen), ptr(cursorLen)
	cur.Pattern = "^[A-Za-z0-9_-]+$"
	cur.Description = "nextCursor of the previous page, as it came, with the same customerId and state; left out for the first page."
	return s
}

func listDraftsOutputSchema() *jsonschema.Schema {
	s := mustFor[listDraftsResult]()
	closeObject(s)
	s.Required = []string{"drafts"}
	s.Description = "One page of reminder drafts, newest first."
	ds := s.Properties["drafts"]
	ds.Types, ds.Type = nil, "array"
	ds.MaxItems = ptr(maxDraftsLimit)
	ds.Description = "The drafts of this page, newest first (then by id); empty when none."
	d := ds.Items
	closeObject(d)
	draftIDRules(d.Properties["id"])
	d.Properties["customerId"].Description = "Customer id, as given when the draft was prepared."
	d.Properties["state"].Enum = enum(reminders.States())
	d.Properties["state"].Description = draftStatesText + "."
	d.Properties["tone"].Enum = enum(reminders.Tones())
	d.Properties["language"].Enum = enum(reminders.Languages())
	d.Properties["subject"].Description = "The reminder's subject line."
	d.Properties["invoiceCount"].Minimum = ptr(1.0)
	d.Properties["invoiceCount"].Description = "How many invoices the reminder lists."
	d.Properties["totalCents"].Minimum = ptr(1.0)
	d.Properties["totalCents"].Description = "Their total, in minor units of currency."
	currencyRules(d.Properties["currency"], "The currency the draft states its amounts in (ISO 4217): BRL, unless its invoices are in another.")
	d.Properties["pixTxid"].Pattern = "^([A-Z0-9]{1,25})?$"
	d.Properties["pixTxid"].Description = "The txid of the draft's PIX code — what a payment carrying it quotes, and what the ledger matches it by; empty when the draft carries no code."
	d.Properties["createdAt"].Format = "date-time"
	d.Properties["createdAt"].Description = "When the draft was written (RFC 3339, UTC)."
	sendingRules(d, "Present once the draft was sent (queued, sent, undeliverable). ")
	nc := s.Properties["nextCursor"]
	nc.Pattern = "^[A-Za-z0-9_-]{" + strconv.Itoa(cursorLen) + "}$"
	nc.Description = "Present when more drafts follow: pass it as cursor, with the same customerId and state, for the next page."
	return s
}

// draftStatesText says what each draft state means, for the schemas that list them.
const draftStatesText = "draft (open, for a person to review), discarded (set aside: the customer asked not to be contacted, or its name or " +
	"e-mail address changed), queued (a person approved sending it; its message waits in the outbox), sent (the mail server accepted " +
	"it) or undeliverable (the mail server refused it for good: failureReason)"

// draftIDRules describes a draft id.
func draftIDRules(s *jsonschema.Schema) {
	s.Pattern = ident.Pattern(reminders.IDPrefix)
	s.Description = "Draft id: " + ident.Describe(reminders.IDPrefix) + "."
}

// noNull makes the named optional properties of s, pointers in Go, plain types in the schema:
// left out, never null.
func noNull(s *jsonschema.Schema, names ...string) {
	for _, n := range names {
		p := s.Properties[n]
		for _, t := range p.Types {
			if t != "null" {
				p.Type = t
			}
		}
		p.Types = nil
	}
}

// enum lists values for a schema's enum.
func enum[T ~string](values []T) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// checked decodes arguments of type T strictly (pipeline.Strict), then runs check, a method of
// T that does what the input schema cannot (the whole text rule, a real date, unique ids, a
// cursor): a refusal is an invalid_arguments failure naming the field.
func checked[T any](b []byte, check func(*T) error) (any, int, error) {
	v, n, err := pipeline.Strict[T]()(b)
	if err != nil {
		return nil, 0, err
	}
	if err := check(v.(*T)); err != nil {
		return nil, 0, err
	}
	return v, n, nil
}
