// Package reminders keeps reminder drafts: the message written for one customer about a set of
// open invoices, in one tone and language, from the templates under templates/, stored until a
// person (or, later, the sender) acts on it.
//
// A draft's natural key is its customer, its invoice set and its tone: while it is still a
// draft, preparing the same reminder again finds it instead of writing a second one. The
// database holds that rule (a partial unique index), so it holds under concurrency and across
// replicas.
//
// The package knows the store and nothing of the tools, the pipeline or MCP: the tool glue in
// internal/collections calls it inside the pipeline's transaction.
package reminders

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// Tone is how firmly a reminder is worded.
type Tone string

// The tones.
const (
	Friendly Tone = "friendly"
	Firm     Tone = "firm"
)

// Tones are the tones, in the order the schema lists them.
func Tones() []Tone { return []Tone{Friendly, Firm} }

// Language is the language a reminder is written in (a BCP 47 tag).
type Language string

// The languages.
const (
	PortugueseBR Language = "pt-BR"
	English      Language = "en"
)

// Languages are the languages, the default first.
func Languages() []Language { return []Language{PortugueseBR, English} }

// State is where a draft is in its life.
type State string

// The states: draft → discarded, or draft → queued → sent | undeliverable.
const (
	// Draft: written, open; the natural key names it.
	Draft State = "draft"
	// Discarded: set aside (its customer asked not to be contacted, or its name or e-mail
	// address changed); kept for the record.
	Discarded State = "discarded"
	// Queued: a person approved sending it, and its message waits in the outbox; it is sent
	// once, never again.
	Queued State = "queued"
	// Sent: the mail server accepted its message.
	Sent State = "sent"
	// Undeliverable: the mail server refused its message for good (FailureReason says why).
	Undeliverable State = "undeliverable"
)

// States are the states, in the order the schema lists them.
func States() []State { return []State{Draft, Discarded, Queued, Sent, Undeliverable} }

// MaxInvoices bounds the invoices one reminder lists: a message a person reads.
const MaxInvoices = 100

// Invoice is one invoice a reminder is about. Its JSON form is the stored one.
type Invoice struct {
	ID          string `json:"id"`
	DueDate     string `json:"dueDate"` // YYYY-MM-DD
	AmountCents int64  `json:"amountCents"`
	// BoletoLine is the invoice's boleto's linha digitável, 47 digits ("" when it has none):
	// the reminder prints it as banks do.
	BoletoLine string `json:"boletoLine,omitempty"`
}

// Request is what Prepare writes a draft from; the caller validated it.
type Request struct {
	CustomerID     string
	To             Recipient // whom the draft greets and goes to: stored with it
	Tone           Tone
	Language       Language
	Invoices       []Invoice // any order; at least one
	CreatedBy      string    // the subject who asked for the draft
	CreatedByActor string    // the agent acting on CreatedBy's behalf; "" for a person
	// Currency is the ISO 4217 code of the invoices' amounts; "" is BRL.
	Currency string
	// PixCode, when not nil, makes the PIX code (BR Code) that pays the draft, from its txid
	// (TxIDFor the draft's id) and its total: the draft carries it. nil: no PIX code.
	PixCode func(txid string, amountCents int64) (string, error)
}

// Recipient is whom a draft is written to: the name it greets (rendered as data) and the
// address it goes to. A draft keeps its own, so that it is sent exactly where the person who
// reviewed it saw, whatever later becomes of the customer's record.
type Recipient struct {
	Name  string
	Email string
}

// Record is a stored draft.
type Record struct {
	ID           string
	CustomerID   string
	To           Recipient
	Tone         Tone
	Language     Language
	State        State
	Subject      string
	Body         string // the text/plain part (Rendered.Text)
	HTML         string // the HTML part; "" for a draft written before reminders had one, and as read by Select, List, Sends, ListSending and SendsNaming (Get reads it)
	Currency     string // ISO 4217 code of its amounts (BRL for a draft written before drafts had one)
	Pix          *Pix   // the PIX code the draft carries; nil when none
	InvoiceCount int
	TotalCents   int64
	// Invoices are the invoices the draft is about, as it was written: sorted by id.
	Invoices       []Invoice
	CreatedBy      string
	CreatedByActor string
	CreatedAt      time.Time // UTC, microseconds
	UpdatedAt      time.Time
	// Sending is set once the draft left draft for the outbox (queued, sent, undeliverable).
	Sending *Sending
}

// Sending is what became of a draft sent: its outbox entry, who asked, and how delivery ended.
type Sending struct {
	OutboxID      int64  // the outbox entry (internal/outbox's ID)
	MessageID     string // the message's Message-ID, angle brackets included
	QueuedBy      string // the subject who asked for the send
	QueuedByActor string // the agent acting for QueuedBy; "" for a person
	ApprovalID    string // the person's approval the send ran under ("" when none was needed)
	QueuedAt      time.Time
	DeliveredAt   time.Time // zero until the mail server accepted the message
	FailedAt      time.Time // zero unless undeliverable
	FailureReason string    // why the mail server refused it (its reply code; never the recipient)
}

// Ref names an open draft: for the reads that list a customer's drafts without their bodies.
type Ref struct {
	ID      string
	Subject string
}

// IDPrefix starts every draft id; ident's 128 random bits follow it.
const IDPrefix = "d_"

// ValidID reports whether s has the shape of a draft id.
func ValidID(s string) bool { return ident.Valid(IDPrefix, s) }

// TxIDFor is the PIX txid of the draft id: the first 25 of the 26 base32 characters after
// "d_", upper-cased (a txid is at most 25 letters and digits). It names the draft: 125 of the
// id's 128 random bits, and the database refuses two drafts with one txid. For a string that
// is not a draft id it is the first 25 letters and digits after the prefix, upper-cased.
func TxIDFor(draftID string) string {
	rest := strings.TrimPrefix(draftID, IDPrefix)
	var b strings.Builder
	for i := 0; i < len(rest) && b.Len() < 25; i++ {
		if c := rest[i]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		}
	}
	return strings.ToUpper(b.String())
}

// invoiceSet is the normalized form of a set of invoices: sorted by id, as JSON, and that
// JSON's SHA-256, the natural key.
type invoiceSet struct {
	json  []byte
	hash  [sha256.Size]byte
	total int64
	// earliestDue is the earliest due date (YYYY-MM-DD): the bulk send's filter by days overdue
	// reads it.
	earliestDue string
	invoices    []Invoice // sorted by id
}

// normalize sorts a copy of invs by id and encodes it.
func normalize(invs []Invoice) (invoiceSet, error) {
	sorted := slices.SortedFunc(slices.Values(invs), func(a, b Invoice) int { return strings.Compare(a.ID, b.ID) })
	b, err := json.Marshal(sorted)
	if err != nil {
		return invoiceSet{}, fmt.Errorf("reminders: encode invoices: %w", err)
	}
	s := invoiceSet{json: b, hash: sha256.Sum256(b), invoices: sorted}
	for i, inv := range sorted {
		s.total += inv.AmountCents
		if i == 0 || inv.DueDate < s.earliestDue {
			s.earliestDue = inv.DueDate
		}
	}
	return s, nil
}

// Prepare returns the open draft of r's customer, invoice set and tone, or writes it with
// templates: created says which. It runs in q, the caller's transaction; an open draft that
// another transaction writes at the same time is found once that one commits (the loser of
// the insert reads the winner), so one request never leaves two drafts.
func Prepare(ctx context.Context, q store.Querier, templates *Templates, r Request, now time.Time) (rec Record, created bool, err error) {
	if len(r.Invoices) == 0 {
		return Record{}, false, errors.New("reminders: a draft needs at least one invoice")
	}
	set, err := normalize(r.Invoices)
	if err != nil {
		return Record{}, false, err
	}
	currency := r.Currency
	if currency == "" {
		currency = value.BaseCurrency
	}
	id := ident.New(IDPrefix)
	var pix *Pix
	if r.PixCode != nil {
		txid := TxIDFor(id)
		code, err := r.PixCode(txid, set.total)
		if err != nil {
			return Record{}, false, fmt.Errorf("reminders: PIX code: %w", err)
		}
		pix = &Pix{Code: code, TxID: txid, AmountCents: set.total}
	}
	out, err := templates.Render(r.Language, r.Tone, Message{Name: r.To.Name, Currency: currency, Invoices: r.Invoices, Pix: pix})
	if err != nil {
		return Record{}, false, err
	}
	at := now.UnixMicro()
	rec = Record{
		ID: id, CustomerID: r.CustomerID, To: r.To, Tone: r.Tone, Language: r.Language, State: Draft,
		Subject: out.Subject, Body: out.Text, HTML: out.HTML, Currency: currency, Pix: pix,
		InvoiceCount: len(r.Invoices), TotalCents: set.total, Invoices: set.invoices,
		CreatedBy: r.CreatedBy, CreatedByActor: r.CreatedByActor, CreatedAt: time.UnixMicro(at).UTC(), UpdatedAt: time.UnixMicro(at).UTC(),
	}
	var stored Pix
	if pix != nil {
		stored = *pix
	}
	n, err := q.Exec(ctx, `INSERT INTO reminder_draft (id, customer_id, recipient_name, recipient_email, tone, language,
    invoices, invoice_set_hash, invoice_count, total_cents, subject, body, state, created_by, created_by_actor,
    created_at, updated_at, earliest_due_date, html, currency, pix_code, pix_txid, pix_amount_cents)
VALUES ($1, $2, $15, $16, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $14, $17, $18, $19, $20, $21, $22)
ON CONFLICT (customer_id, invoice_set_hash, tone) WHERE state = 'draft' DO NOTHING`,
		rec.ID, rec.CustomerID, string(rec.Tone), string(rec.Language), string(set.json), set.hash[:],
		int64(rec.InvoiceCount), rec.TotalCents, rec.Subject, rec.Body, string(Draft), rec.CreatedBy, rec.CreatedByActor, at,
		rec.To.Name, rec.To.Email, set.earliestDue, rec.HTML, rec.Currency, stored.Code, stored.TxID, stored.AmountCents)
	if err != nil {
		return Record{}, false, fmt.Errorf("reminders: insert draft: %w", err)
	}
	if n == 1 {
		return rec, true, nil
	}
	row := q.QueryRow(ctx, `SELECT `+recordColumns+` FROM reminder_draft
WHERE customer_id = $1 AND invoice_set_hash = $2 AND tone = $3 AND state = 'draft'`,
		r.CustomerID, set.hash[:], string(r.Tone))
	if rec, err = scanRecord(row); err != nil {
		return Record{}, false, fmt.Errorf("reminders: read the open draft: %w", err)
	}
	return rec, false, nil
}

// listColumns are recordColumns reading ” for the HTML part: the reads of many drafts (a bulk
// send's plan, the listings) never show it — a sender reads it by id (Get) — and over 10 000
// drafts it is some 40 MB. Record.HTML is "" in what they return.
var listColumns = strings.Replace(recordColumns, ", html,", ", '',", 1)

// recordColumns are the columns scanRecord reads, in its order.
const recordColumns = `id, customer_id, recipient_name, recipient_email, tone, language, state, subject, body, invoice_count, total_cents,
    created_by, created_by_actor, created_at, updated_at, COALESCE(outbox_id, 0), COALESCE(message_id, ''), COALESCE(queued_by, ''),
    COALESCE(queued_by_actor, ''), COALESCE(approval_id, ''), COALESCE(queued_at, 0), COALESCE(delivered_at, 0), COALESCE(failed_at, 0),
    COALESCE(failure_reason, ''), invoices, html, currency, pix_code, pix_txid, pix_amount_cents`

func scanRecord(row store.Row) (Record, error) {
	var r Record
	var s Sending
	var p Pix
	var tone, lang, state, invoices string
	var count, created, updated, queued, delivered, failed int64
	if err := row.Scan(&r.ID, &r.CustomerID, &r.To.Name, &r.To.Email, &tone, &lang, &state, &r.Subject, &r.Body, &count, &r.TotalCents,
		&r.CreatedBy, &r.CreatedByActor, &created, &updated, &s.OutboxID, &s.MessageID, &s.QueuedBy, &s.QueuedByActor, &s.ApprovalID,
		&queued, &delivered, &failed, &s.FailureReason, &invoices, &r.HTML, &r.Currency, &p.Code, &p.TxID, &p.AmountCents); err != nil {
		return Record{}, err
	}
	if p.Code != "" {
		r.Pix = &p
	}
	if err := json.Unmarshal([]byte(invoices), &r.Invoices); err != nil {
		return Record{}, fmt.Errorf("draft %s: its invoices: %w", r.ID, err)
	}
	r.Tone, r.Language, r.State, r.InvoiceCount = Tone(tone), Language(lang), State(state), int(count)
	r.CreatedAt, r.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	if s.OutboxID != 0 {
		s.QueuedAt = time.UnixMicro(queued).UTC()
		if delivered != 0 {
			s.DeliveredAt = time.UnixMicro(delivered).UTC()
		}
		if failed != 0 {
			s.FailedAt = time.UnixMicro(failed).UTC()
		}
		r.Sending = &s
	}
	return r, nil
}

// OpenDrafts returns the ids and subjects of the customer's open drafts (state draft), oldest
// first; none is an empty list.
func OpenDrafts(ctx context.Context, q store.Querier, customerID string) ([]Ref, error) {
	rows, err := q.Query(ctx, `SELECT id, subject FROM reminder_draft
WHERE customer_id = $1 AND state = 'draft' ORDER BY created_at, id`, customerID)
	if err != nil {
		return nil, fmt.Errorf("reminders: open drafts: %w", err)
	}
	defer rows.Close()
	refs := []Ref{}
	for rows.Next() {
		var r Ref
		if err := rows.Scan(&r.ID, &r.Subject); err != nil {
			return nil, fmt.Errorf("reminders: open drafts: %w", err)
		}
		refs = append(refs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reminders: open drafts: %w", err)
	}
	return refs, nil
}

// DiscardOpen sets every open draft of the customer to discarded, as of now, and returns how
// many it changed. It runs in tx, the transaction of the change that calls for it (a customer
// who asked not to be contacted), so the drafts and the cause change together.
func DiscardOpen(ctx context.Context, tx store.Querier, customerID string, now time.Time) (int64, error) {
	n, err := tx.Exec(ctx, `UPDATE reminder_draft SET state = $1, updated_at = $2
WHERE customer_id = $3 AND state = 'draft'`, string(Discarded), now.UnixMicro(), customerID)
	if err != nil {
		return 0, fmt.Errorf("reminders: discard open drafts: %w", err)
	}
	return n, nil
}

// DiscardIDs sets those of the drafts ids still open to discarded, as of now, and returns how
// many it changed: a schedule's batch that lapsed unapproved gives its drafts up so.
func DiscardIDs(ctx context.Context, tx store.Querier, ids []string, now time.Time) (int64, error) {
	var total int64
	for _, id := range ids {
		n, err := tx.Exec(ctx, `UPDATE reminder_draft SET state = $1, updated_at = $2 WHERE id = $3 AND state = 'draft'`,
			string(Discarded), now.UnixMicro(), id)
		if err != nil {
			return total, fmt.Errorf("reminders: discard drafts: %w", err)
		}
		total += n
	}
	return total, nil
}

// DiscardNotTo sets the customer's open drafts written to another recipient than to (another
// name or e-mail address) to discarded, as of now, and returns how many it changed. It runs in
// tx, the transaction that changes the customer's name or address: a draft that greets the old
// name or goes to the old address is not left for a person to send.
func DiscardNotTo(ctx context.Context, tx store.Querier, customerID string, to Recipient, now time.Time) (int64, error) {
	n, err := tx.Exec(ctx, `UPDATE reminder_draft SET state = $1, updated_at = $2
WHERE customer_id = $3 AND state = 'draft' AND (recipient_name <> $4 OR recipient_email <> $5)`,
		string(Discarded), now.UnixMicro(), customerID, to.Name, to.Email)
	if err != nil {
		return 0, fmt.Errorf("reminders: discard drafts to another recipient: %w", err)
	}
	return n, nil
}

// Position is a place in the listing order (newest first: created_at, then id, descending).
type Position struct {
	CreatedAt int64 // microseconds since the epoch
	ID        string
}

// PositionOf is the place of r in the listing order.
func PositionOf(r Record) Position { return Position{CreatedAt: r.CreatedAt.UnixMicro(), ID: r.ID} }

// Filter selects the drafts List returns.
type Filter struct {
	CustomerID string // "" for every customer
	State      State  // "" for every state
	After      *Position
	Limit      int // at least 1
}

// List returns up to f.Limit drafts that f selects, newest first, starting after f.After:
// a keyset page, stable while drafts are added (new ones come before the first page).
func List(ctx context.Context, q store.Querier, f Filter) ([]Record, error) {
	if f.Limit < 1 {
		return nil, errors.New("reminders: list: a limit of at least 1 is required")
	}
	var where []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.CustomerID != "" {
		where = append(where, "customer_id = "+arg(f.CustomerID))
	}
	if f.State != "" {
		where = append(where, "state = "+arg(string(f.State)))
	}
	switch {
	case f.After != nil && f.CustomerID != "":
		// The customer's index (customer_id, created_at, id) serves a row
		// comparison over all three columns, not over its last two
		// (PostgreSQL would walk every newer draft of every customer).
		where = append(where, "(customer_id, created_at, id) < ("+arg(f.CustomerID)+", "+arg(f.After.CreatedAt)+", "+arg(f.After.ID)+")")
	case f.After != nil:
		where = append(where, "(created_at, id) < ("+arg(f.After.CreatedAt)+", "+arg(f.After.ID)+")")
	}
	sql := `SELECT ` + listColumns + ` FROM reminder_draft`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY created_at DESC, id DESC LIMIT " + arg(int64(f.Limit))
	return queryRecords(ctx, q, "list", sql, args...)
}

// queryRecords runs sql, which selects recordColumns, and reads every row; op names the
// operation in errors. None is an empty list.
func queryRecords(ctx context.Context, q store.Querier, op, sql string, args ...any) ([]Record, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("reminders: %s: %w", op, err)
	}
	defer rows.Close()
	out := []Record{}
	for rows.Next() {
		r, err := scanRecord(rows)
		if err != nil {
			return nil, fmt.Errorf("reminders: %s: %w", op, err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reminders: %s: %w", op, err)
	}
	return out, nil
}
