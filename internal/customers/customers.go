// Package customers keeps the operator's customers and their contact status
// (contactable, paused until a date, do not contact): who may be written to,
// who said so, why and when. Tools and the CSV import create and update
// customers here; nothing else decides whether a customer may be contacted.
//
// Names, e-mail addresses and reasons are what a person or an agent wrote:
// they are validated (the shared text rule, value.TextProblem), stored as
// data and never interpreted here.
package customers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// Status is a customer's contact status.
type Status string

// The contact statuses.
const (
	// Contactable: reminders may be prepared and sent.
	Contactable Status = "contactable"
	// Paused: no contact before the customer's PausedUntil date; from that
	// day on the customer is contactable again.
	Paused Status = "paused"
	// DoNotContact: never contacted until a person sets another status.
	DoNotContact Status = "do_not_contact"
)

// Statuses lists every Status, in the order the contracts show them.
func Statuses() []Status { return []Status{Contactable, Paused, DoNotContact} }

// Valid reports whether s is one of the contact statuses.
func (s Status) Valid() bool {
	switch s {
	case Contactable, Paused, DoNotContact:
		return true
	}
	return false
}

// The failure codes of this domain, each listed in the contracts of the
// tools that can answer it.
const (
	// CodeDoNotContact: the customer's status is do_not_contact.
	CodeDoNotContact failure.Code = "customer_do_not_contact"
	// CodePaused: the customer's status is paused until a date later than
	// today; the message carries the date.
	CodePaused failure.Code = "customer_paused"
	// CodeNotFound: no customer has the id.
	CodeNotFound failure.Code = "customer_not_found"
)

// ErrNotFound is returned when no customer has the id asked for.
var ErrNotFound = errors.New("customers: customer not found")

// MaxEmailLen bounds an e-mail address, in bytes (RFC 5321's path limit less
// its angle brackets).
const MaxEmailLen = 254

// DateLayout is how dates are written: YYYY-MM-DD.
const DateLayout = time.DateOnly

// Customer is one stored customer.
type Customer struct {
	ID    string
	Name  string
	Email string
	// Status and, when Paused, PausedUntil (YYYY-MM-DD).
	Status      Status
	PausedUntil string
	// Reason, SetBy (the subject), SetByActor (the agent acting on SetBy's
	// behalf; "" for a person) and SetAt say why, by whom and when the
	// status was last set; all empty (SetAt zero) while it never was.
	Reason     string
	SetBy      string
	SetByActor string
	SetAt      time.Time
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Contactable returns nil when the customer may be contacted on today (a
// YYYY-MM-DD date), or the failure saying why not: customer_do_not_contact,
// or customer_paused with the date contact resumes. The failure names no
// field: the caller knows which argument named the customer.
func (c Customer) Contactable(today string) *failure.Error {
	switch s, _ := c.InEffect(today); s {
	case DoNotContact:
		return &failure.Error{Code: CodeDoNotContact, Message: "the customer asked not to be contacted (status do_not_contact); nothing was done"}
	case Paused:
		return &failure.Error{Code: CodePaused, Message: "contact with the customer is paused until " + c.PausedUntil + "; nothing was done"}
	}
	return nil
}

// InEffect returns the contact status in effect on today (a YYYY-MM-DD
// date): the stored one, except that a pause has ended from its PausedUntil
// day on, when the customer is Contactable again and ended is that day. ended
// is "" otherwise. Every reader of a status goes through it (Contactable
// too), so that no two places disagree on whether a pause is over.
func (c Customer) InEffect(today string) (s Status, ended string) {
	if c.Status == Paused && today >= c.PausedUntil { // both YYYY-MM-DD: text order is date order
		return Contactable, c.PausedUntil
	}
	return c.Status, ""
}

// Record is what the operator or an agent says of a customer: its id, name
// and e-mail address.
type Record struct {
	ID    string
	Name  string
	Email string
}

// Validate returns nil when r is acceptable, or an invalid_arguments failure
// naming the field, prefix followed by id, name or email ("customer." gives
// "customer.email"). The message never holds the value.
func (r Record) Validate(prefix string) *failure.Error {
	bad := func(field, msg string) *failure.Error {
		return &failure.Error{Code: failure.InvalidArguments, Field: prefix + field, Message: msg}
	}
	if p := IDProblem(r.ID); p != "" {
		return bad("id", p)
	}
	if p := value.TextProblem(r.Name); p != "" {
		return bad("name", p)
	}
	if p := EmailProblem(r.Email); p != "" {
		return bad("email", p)
	}
	return nil
}

// IDProblem returns why s is not acceptable as a customer id, or "" when it
// is: the shared text rule (value.TextProblem), as for analyze_portfolio's
// customerId, and no white space at either end — "c-1 " is not another name for c-1, nor a new
// customer beside it.
func IDProblem(s string) string {
	if p := value.TextProblem(s); p != "" {
		return p
	}
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsSpace(r) {
		return "must not begin with white space"
	}
	if r, _ := utf8.DecodeLastRuneInString(s); unicode.IsSpace(r) {
		return "must not end with white space"
	}
	return ""
}

// EmailKey is the form in which e-mail addresses are compared: lower case
// (strings.ToLower), so that Ana@Example.com and ana@example.com are one
// address. It is stored beside the address (column email_key, indexed).
func EmailKey(email string) string { return strings.ToLower(email) }

// EmailProblem returns why s is not acceptable as a customer's e-mail
// address, or "" when it is: a bare address (local@domain, no display name,
// no angle brackets, no comment) of at most MaxEmailLen bytes that
// net/mail.ParseAddress reads back as exactly itself, whose domain is a
// name, not a domain literal, and that the shared text rule
// (value.TextProblem) accepts. The message never holds s.
func EmailProblem(s string) string {
	if len(s) > MaxEmailLen {
		return "must be at most " + strconv.Itoa(MaxEmailLen) + " bytes"
	}
	if p := value.TextProblem(s); p != "" {
		return p
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return "must be a bare e-mail address (local@domain), with no display name, angle brackets or comment"
	}
	// A domain literal (t@[127.0.0.1], RFC 5321 §4.1.3) would have the
	// mail server deliver to an address the caller picks — the loopback, a
	// host on the private network — not to a domain's mail servers; so
	// would a dotted address some servers read as one (t@127.0.0.1: no
	// top-level domain is a number).
	domain := s[strings.LastIndexByte(s, '@')+1:]
	if strings.HasPrefix(domain, "[") || strings.Trim(domain[strings.LastIndexByte(domain, '.')+1:], "0123456789") == "" {
		return "must name a domain after the @, not an address (a domain literal such as [127.0.0.1], or a number)"
	}
	return ""
}

// ReasonProblem returns why s is not acceptable as the reason for a status,
// or "": the shared text rule, value.TextProblem (non-blank, at most
// value.MaxTextLen characters, no control or invisible characters).
func ReasonProblem(s string) string { return value.TextProblem(s) }

// PausedUntilProblem returns why s is not acceptable as the date a pause
// ends, given today (YYYY-MM-DD), or "": a date as analyze_portfolio's
// (value.DateProblem: YYYY-MM-DD, a real calendar date, from
// value.MinDate to value.MaxDate), later than today.
func PausedUntilProblem(s, today string) string {
	if p := value.DateProblem(s); p != "" {
		return p
	}
	if s <= today {
		return "must be later than today (" + today + ")"
	}
	return ""
}

// Today is the date of now, in UTC, as YYYY-MM-DD: the day against which
// pauses are compared.
func Today(now time.Time) string { return now.UTC().Format(DateLayout) }

// columns are the columns scan reads, in its order.
const columns = `id, name, email, contact_status, paused_until, status_reason, status_set_by,
	status_set_actor, status_set_at, created_at, updated_at`

// scan reads one row of columns.
func scan(row store.Row) (Customer, error) {
	var c Customer
	var status string
	var setAt, created, updated int64
	if err := row.Scan(&c.ID, &c.Name, &c.Email, &status, &c.PausedUntil, &c.Reason, &c.SetBy,
		&c.SetByActor, &setAt, &created, &updated); err != nil {
		return Customer{}, err
	}
	c.Status = Status(status)
	if setAt != 0 {
		c.SetAt = time.UnixMicro(setAt).UTC()
	}
	c.CreatedAt, c.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return c, nil
}

// Get returns the customer id, or ErrNotFound.
func Get(ctx context.Context, q store.Querier, id string) (Customer, error) {
	return get(ctx, q, `SELECT `+columns+` FROM customer WHERE id = $1`, id)
}

// GetForUpdate returns the customer id, locked until tx ends (PostgreSQL
// SELECT … FOR UPDATE; a SQLite write transaction holds the whole database),
// or ErrNotFound.
func GetForUpdate(ctx context.Context, tx store.Tx, id string) (Customer, error) {
	q := `SELECT ` + columns + ` FROM customer WHERE id = $1`
	if tx.Dialect() == store.Postgres {
		q += ` FOR UPDATE`
	}
	return get(ctx, tx, q, id)
}

func get(ctx context.Context, q store.Querier, sql, id string) (Customer, error) {
	c, err := scan(q.QueryRow(ctx, sql, id))
	switch {
	case errors.Is(err, store.ErrNoRows):
		return Customer{}, ErrNotFound
	case err != nil:
		return Customer{}, fmt.Errorf("customers: get: %w", err)
	}
	return c, nil
}

// LockForContact returns, locked until tx ends and in id order, the customer id (when stored)
// and every customer whose e-mail address is email (compared as EmailKey): those whose
// contact status decides whether a message for id at email may be written. The one
// statement takes the row locks in id order, so that two calls for two customers sharing an
// address cannot each hold one lock and wait for the other. A status change on any of them
// in flight is waited for, and read as committed.
func LockForContact(ctx context.Context, tx store.Tx, id, email string) ([]Customer, error) {
	return forContact(ctx, tx, tx.Dialect() == store.Postgres, id, email)
}

// ForContact returns what LockForContact does, without locking it: for a reader that only
// shows what a send would find (a preview), and changes nothing on it.
func ForContact(ctx context.Context, q store.Querier, id, email string) ([]Customer, error) {
	return forContact(ctx, q, false, id, email)
}

func forContact(ctx context.Context, db store.Querier, lock bool, id, email string) ([]Customer, error) {
	q := `SELECT ` + columns + ` FROM customer WHERE id = $1 OR email_key = $2 ORDER BY id`
	if lock {
		q += ` FOR UPDATE`
	}
	return queryContact(ctx, db, q, id, EmailKey(email))
}

// LockAllForContact is LockForContact for many drafts at once: the customers ids and every
// customer with one of the addresses emails, locked in one statement, in id order (the order
// in which LockForContact locks them), until tx ends.
func LockAllForContact(ctx context.Context, tx store.Tx, ids, emails []string) ([]Customer, error) {
	return allForContact(ctx, tx, tx.Dialect() == store.Postgres, ids, emails)
}

// AllForContact returns what LockAllForContact does, without locking it.
func AllForContact(ctx context.Context, q store.Querier, ids, emails []string) ([]Customer, error) {
	return allForContact(ctx, q, false, ids, emails)
}

func allForContact(ctx context.Context, db store.Querier, lock bool, ids, emails []string) ([]Customer, error) {
	d, ok := store.DialectOf(db)
	if !ok {
		return nil, errors.New("customers: lock for contact: a querier of unknown dialect")
	}
	if len(ids) == 0 && len(emails) == 0 {
		return nil, nil
	}
	ids = append(make([]string, 0, len(ids)), ids...) // never nil: JSON [] rather than null
	keys := make([]string, len(emails))
	for i, e := range emails {
		keys[i] = EmailKey(e)
	}
	idList, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("customers: lock for contact: %w", err)
	}
	keyList, err := json.Marshal(keys)
	if err != nil {
		return nil, fmt.Errorf("customers: lock for contact: %w", err)
	}
	q := `SELECT ` + columns + ` FROM customer WHERE ` + store.InList(d, "id", "$1") + ` OR ` + store.InList(d, "email_key", "$2") + ` ORDER BY id`
	if lock {
		q += ` FOR UPDATE`
	}
	return queryContact(ctx, db, q, string(idList), string(keyList))
}

func queryContact(ctx context.Context, db store.Querier, q string, args ...any) ([]Customer, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("customers: lock for contact: %w", err)
	}
	defer rows.Close()
	var out []Customer
	for rows.Next() {
		c, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("customers: lock for contact: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("customers: lock for contact: %w", err)
	}
	return out, nil
}

// AddressContactable returns nil when email may be written to on today (YYYY-MM-DD) as far
// as the customers cs say (those LockForContact returned: only the ones with that address
// count), or the failure saying why not: customer_do_not_contact when one of them asked not
// to be contacted, else customer_paused with the latest date contact resumes. The message
// names no customer: the caller may know only its own.
func AddressContactable(cs []Customer, email, today string) *failure.Error {
	key, until := EmailKey(email), ""
	for _, c := range cs {
		if EmailKey(c.Email) != key {
			continue
		}
		if fe := c.Contactable(today); fe != nil {
			if fe.Code == CodeDoNotContact {
				return &failure.Error{Code: CodeDoNotContact, Message: "a customer with this e-mail address asked not to be contacted (status do_not_contact); nothing was done"}
			}
			until = max(until, c.PausedUntil)
		}
	}
	if until != "" {
		return &failure.Error{Code: CodePaused, Message: "contact with this e-mail address is paused until " + until + "; nothing was done"}
	}
	return nil
}

// Outcome is what an upsert did.
type Outcome int

// The outcomes of an upsert.
const (
	Created Outcome = iota
	Updated
	Unchanged
)

// Upsert creates the customer r (contactable) or updates its name and e-mail
// address, never its status, and returns it as stored, locked until tx ends
// whatever it did (created, updated or unchanged). r must pass Validate; an
// invalid r is refused with its invalid_arguments failure.
func Upsert(ctx context.Context, tx store.Tx, r Record, now time.Time) (Customer, error) {
	c, _, err := upsert(ctx, tx, r, now)
	return c, err
}

// UpsertOutcome is Upsert, saying what it did: a caller that must know whether the customer
// changed (prepare_reminder) reads it here rather than comparing records.
func UpsertOutcome(ctx context.Context, tx store.Tx, r Record, now time.Time) (Customer, Outcome, error) {
	return upsert(ctx, tx, r, now)
}

// upsert is Upsert, saying what it did.
func upsert(ctx context.Context, tx store.Tx, r Record, now time.Time) (Customer, Outcome, error) {
	if fe := r.Validate(""); fe != nil {
		return Customer{}, 0, fe
	}
	at := now.UnixMicro()
	key := EmailKey(r.Email)
	c, err := scan(tx.QueryRow(ctx, `INSERT INTO customer (id, name, email, email_key, created_at, updated_at)
VALUES ($1, $2, $3, $5, $4, $4) ON CONFLICT (id) DO NOTHING RETURNING `+columns, r.ID, r.Name, r.Email, at, key))
	if err == nil {
		return c, Created, nil
	}
	if !errors.Is(err, store.ErrNoRows) {
		return Customer{}, 0, fmt.Errorf("customers: insert: %w", err)
	}
	c, err = scan(tx.QueryRow(ctx, `UPDATE customer SET name = $2, email = $3, email_key = $5, updated_at = $4
WHERE id = $1 AND (name <> $2 OR email <> $3) RETURNING `+columns, r.ID, r.Name, r.Email, at, key))
	if err == nil {
		return c, Updated, nil
	}
	if !errors.Is(err, store.ErrNoRows) {
		return Customer{}, 0, fmt.Errorf("customers: update: %w", err)
	}
	// Unchanged: no statement above locked the row (the insert met a row another transaction
	// had written, the update matched nothing), so lock it now, and read it as it is once
	// locked — a status committed meanwhile is seen, and one set later waits for tx.
	c, err = GetForUpdate(ctx, tx, r.ID)
	if err != nil {
		return Customer{}, 0, err
	}
	return c, Unchanged, nil
}

// Change is a new contact status and who sets it, why.
type Change struct {
	Status      Status
	PausedUntil string // YYYY-MM-DD, later than today, iff Status is Paused
	Reason      string
	SetBy       string // the subject
	SetByActor  string // the agent acting on SetBy's behalf, or ""
}

// Same reports whether ch is the status c has in effect on today (UTC,
// YYYY-MM-DD): a pause that is over is contactable, by InEffect, the rule
// Contactable reads.
func (ch Change) Same(c Customer, today string) bool {
	if s, ended := c.InEffect(today); ended != "" {
		return ch.Status == s && ch.PausedUntil == ""
	}
	return ch.Status == c.Status && ch.PausedUntil == c.PausedUntil
}

// SetStatus sets the contact status of the customer id to ch, with its
// reason, who set it and now, and returns the customer as stored. Callers
// check ch first (Status valid, PausedUntil iff paused, reason); SetStatus
// refuses an invalid one all the same, with invalid_arguments, and answers
// ErrNotFound for an unknown id.
func SetStatus(ctx context.Context, tx store.Tx, id string, ch Change, now time.Time) (Customer, error) {
	if fe := ch.Validate(Today(now)); fe != nil {
		return Customer{}, fe
	}
	c, err := scan(tx.QueryRow(ctx, `UPDATE customer SET contact_status = $2, paused_until = $3,
status_reason = $4, status_set_by = $5, status_set_actor = $6, status_set_at = $7, updated_at = $7
WHERE id = $1 RETURNING `+columns, id, string(ch.Status), ch.PausedUntil, ch.Reason, ch.SetBy, ch.SetByActor, now.UnixMicro()))
	switch {
	case errors.Is(err, store.ErrNoRows):
		return Customer{}, ErrNotFound
	case err != nil:
		return Customer{}, fmt.Errorf("customers: set status: %w", err)
	}
	return c, nil
}

// Validate returns nil when ch is a status a person may set on today
// (YYYY-MM-DD), or an invalid_arguments failure naming the argument
// (status, pausedUntil, reason). With today "" every date counts as later:
// everything but the clock is checked (a tool's decoder, which has none).
func (ch Change) Validate(today string) *failure.Error {
	bad := func(field, msg string) *failure.Error {
		return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	switch {
	case !ch.Status.Valid():
		return bad("status", "must be one of contactable, paused, do_not_contact")
	case ch.Status == Paused && ch.PausedUntil == "":
		return bad("pausedUntil", "is required when status is paused")
	case ch.Status != Paused && ch.PausedUntil != "":
		return bad("pausedUntil", "is allowed only when status is paused")
	}
	if ch.Status == Paused {
		if p := PausedUntilProblem(ch.PausedUntil, today); p != "" {
			return bad("pausedUntil", p)
		}
	}
	if p := ReasonProblem(ch.Reason); p != "" {
		return bad("reason", p)
	}
	return nil
}
