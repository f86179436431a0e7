package collections

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/reminders"
	"github.com/cobranca/cobranca/internal/store"
)

// skipReason is why a bulk send's plan leaves out a draft its selection holds.
type skipReason string

// The reasons, in the order the plan checks them: the first that applies is the draft's.
const (
	skipNotOpen      skipReason = "not_open"       // draftIds named a draft already queued, sent, undeliverable or discarded
	skipDoNotContact skipReason = "do_not_contact" // its customer, or a customer with its address, asked not to be contacted
	skipPaused       skipReason = "paused"         // contact with its customer, or with its address, is paused
	skipSuppressed   skipReason = "suppressed"     // an earlier message to its address was refused for good
	skipSettled      skipReason = "settled"        // the ledger says an invoice of it is paid, void or written off
	skipStale        skipReason = "stale"          // the ledger says an invoice of it is disputed, promised, or owes another amount
	skipNotInLedger  skipReason = "not_in_ledger"  // COBRANCA_LEDGER_REQUIRED, and an invoice of it is not in the ledger
)

// ledgerSkips are the skip reasons of the ledger's refusal codes.
var ledgerSkips = map[failure.Code]skipReason{
	ledger.CodeInvoiceSettled:  skipSettled,
	ledger.CodeDraftStale:      skipStale,
	ledger.CodeInvoiceNotFound: skipNotInLedger,
}

// skipCounts counts a plan's skipped drafts by reason.
type skipCounts struct {
	NotOpen      int `json:"notOpen"`
	DoNotContact int `json:"doNotContact"`
	Paused       int `json:"paused"`
	Suppressed   int `json:"suppressed"`
	Settled      int `json:"settled"`
	Stale        int `json:"stale"`
	NotInLedger  int `json:"notInLedger"`
}

func (s *skipCounts) add(r skipReason) {
	switch r {
	case skipNotOpen:
		s.NotOpen++
	case skipDoNotContact:
		s.DoNotContact++
	case skipPaused:
		s.Paused++
	case skipSuppressed:
		s.Suppressed++
	case skipSettled:
		s.Settled++
	case skipStale:
		s.Stale++
	case skipNotInLedger:
		s.NotInLedger++
	}
}

func (s skipCounts) total() int {
	return s.NotOpen + s.DoNotContact + s.Paused + s.Suppressed + s.Settled + s.Stale + s.NotInLedger
}

// bulkPlan is exactly what a bulk send would do now: the drafts it sends, by id, and those of
// its selection it skips, and why; hash digests all of it.
type bulkPlan struct {
	send    []reminders.Record
	skipped skipCounts
	// fallback counts the drafts sent whose recipient has no name to greet
	// (reminders.GreetsByName): their message opens with the fallback greeting.
	fallback int
	// unchecked counts the drafts sent that name an invoice the ledger does not know: its
	// payment cannot be checked (COBRANCA_LEDGER_REQUIRED skips them instead).
	unchecked int
	hash      string
}

// planVersion starts what a plan hash digests: a plan of another shape never matches.
const planVersion = "cobranca.bulk_send_reminders.plan/1"

// planBulk computes the plan of a, today (YYYY-MM-DD); with required
// (COBRANCA_LEDGER_REQUIRED), a draft naming an invoice the ledger does not know is skipped.
// In a transaction (q is a store.Tx) it locks what it reads until the transaction ends, in
// send_reminder's order — the customers (those of the drafts and every customer with one of
// their addresses), then the drafts, then their invoices' ledger rows (one round trip for all)
// — so that the plan still holds when the caller acts on it; otherwise it only reads.
func planBulk(ctx context.Context, q store.Querier, a *bulkArgs, today string, required bool) (*bulkPlan, error) {
	sel, err := a.selection(today)
	if err != nil {
		return nil, err
	}
	drafts, err := reminders.Select(ctx, q, sel, false, reminders.MaxBulk+1)
	if err != nil {
		return nil, err
	}
	if err := a.checkSelected(drafts); err != nil {
		return nil, err
	}
	ids, emails := contactsOf(drafts)
	var cs []customers.Customer
	if tx, locking := q.(store.Tx); locking {
		if cs, err = customers.LockAllForContact(ctx, tx, ids, emails); err != nil {
			return nil, err
		}
		// Read again, locked: on PostgreSQL the first read locked nothing, and a draft may
		// have changed (been discarded, sent) or, for a filter, appeared since.
		if drafts, err = reminders.Select(ctx, tx, sel, true, reminders.MaxBulk+1); err != nil {
			return nil, err
		}
		if err := a.checkSelected(drafts); err != nil {
			return nil, err
		}
		if lockedIDs, lockedEmails := contactsOf(drafts); !subset(lockedIDs, ids) || !subset(lockedEmails, emails) {
			// A draft of another customer or address appeared between the two reads: the
			// plan is not the one a dry run could have shown (and its customers are not
			// locked). Nothing is done; a new dry run shows the new plan.
			return nil, planChanged("the drafts the filter selects changed while the call ran")
		}
	} else if cs, err = customers.AllForContact(ctx, q, ids, emails); err != nil {
		return nil, err
	}
	undeliverable, err := reminders.UndeliverableAddresses(ctx, q)
	if err != nil {
		return nil, err
	}
	suppressed := make(map[string]bool, len(undeliverable))
	for _, e := range undeliverable {
		suppressed[customers.EmailKey(e)] = true
	}
	verdicts, err := draftVerdicts(ctx, q, today, drafts)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]customers.Customer, len(cs))
	byAddress := map[string][]customers.Customer{}
	for _, c := range cs {
		byID[c.ID] = c
		k := customers.EmailKey(c.Email)
		byAddress[k] = append(byAddress[k], c)
	}
	p := &bulkPlan{}
	h := sha256.New()
	h.Write([]byte(planVersion + "\n"))
	for _, d := range drafts {
		c, ok := byID[d.CustomerID]
		if !ok { // the draft's foreign key holds its customer
			return nil, fmt.Errorf("bulk_send_reminders: draft %s: its customer is not stored", d.ID)
		}
		key := customers.EmailKey(d.To.Email)
		reason := skipReason("")
		switch {
		case d.State != reminders.Draft:
			reason = skipNotOpen
		default:
			fe := c.Contactable(today)
			if fe == nil {
				fe = customers.AddressContactable(byAddress[key], d.To.Email, today)
			}
			switch {
			case fe != nil && fe.Code == customers.CodeDoNotContact:
				reason = skipDoNotContact
			case fe != nil:
				reason = skipPaused
			case suppressed[key]:
				reason = skipSuppressed
			default:
				if fe := ledgerRefusal(verdicts[d.ID], required, ""); fe != nil {
					reason = ledgerSkips[fe.Code]
				}
			}
		}
		if reason != "" {
			p.skipped.add(reason)
			field(h, "skip", d.ID, string(reason))
			continue
		}
		p.send = append(p.send, d)
		if !reminders.GreetsByName(d.To.Name) {
			p.fallback++
		}
		if slices.ContainsFunc(verdicts[d.ID], func(v ledger.Verdict) bool { return !v.Known }) {
			p.unchecked++
		}
		// The HTML part is rendered from what the text part and the code say, and, like them,
		// never changes once the draft is written: the plan reads it not (reminders.Select).
		subject, body := sha256.Sum256([]byte(d.Subject)), sha256.Sum256([]byte(d.Body))
		field(h, "send", d.ID, d.CustomerID, d.To.Name, d.To.Email, string(d.Language), string(d.Tone),
			hex.EncodeToString(subject[:]), hex.EncodeToString(body[:]), pixTxID(d), pixCode(d))
	}
	p.hash = hex.EncodeToString(h.Sum(nil))
	return p, nil
}

// draftVerdicts are the ledger's verdicts on the invoices of the open drafts, by draft id: one
// ledger check for all of them (checkLedger, which locks in a transaction).
func draftVerdicts(ctx context.Context, q store.Querier, today string, drafts []reminders.Record) (map[string][]ledger.Verdict, error) {
	type pair struct {
		id    string
		cents int64
	}
	at := map[pair]int{}
	var expect []ledger.Expected
	for _, d := range drafts {
		if d.State != reminders.Draft {
			continue
		}
		for _, e := range expected(d) {
			k := pair{e.InvoiceID, e.OpenCents}
			if _, seen := at[k]; !seen {
				at[k] = len(expect)
				expect = append(expect, e)
			}
		}
	}
	vs, err := checkLedger(ctx, q, today, expect)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(expect) {
		return nil, fmt.Errorf("bulk_send_reminders: the ledger judged %d invoices of %d", len(vs), len(expect))
	}
	out := make(map[string][]ledger.Verdict, len(drafts))
	for _, d := range drafts {
		if d.State != reminders.Draft {
			continue
		}
		for _, inv := range d.Invoices {
			out[d.ID] = append(out[d.ID], vs[at[pair{inv.ID, inv.AmountCents}]])
		}
	}
	return out, nil
}

// field writes one line of a plan into h: its values, each prefixed by its length, so that no
// two plans write the same bytes.
func field(h hash.Hash, values ...string) {
	for _, v := range values {
		h.Write([]byte(strconv.Itoa(len(v)) + ":" + v + ","))
	}
	h.Write([]byte("\n"))
}

// contactsOf returns the customers and the addresses of drafts, each once, sorted.
func contactsOf(drafts []reminders.Record) (ids, emails []string) {
	for _, d := range drafts {
		ids = append(ids, d.CustomerID)
		emails = append(emails, customers.EmailKey(d.To.Email))
	}
	slices.Sort(ids)
	slices.Sort(emails)
	return slices.Compact(ids), slices.Compact(emails)
}

// subset reports whether every element of a, sorted, is in b, sorted.
func subset(a, b []string) bool {
	for _, s := range a {
		if _, ok := slices.BinarySearch(b, s); !ok {
			return false
		}
	}
	return true
}

// selection is what a's draftIds or filter select on today.
func (a *bulkArgs) selection(today string) (reminders.Selection, error) {
	if a.Filter == nil {
		return reminders.Selection{IDs: a.DraftIDs}, nil
	}
	sel := reminders.Selection{CustomerIDs: a.Filter.CustomerIDs}
	if a.Filter.Tone != nil {
		sel.Tone = reminders.Tone(*a.Filter.Tone)
	}
	if a.Filter.MinDaysOverdue != nil {
		t, err := time.Parse(time.DateOnly, today)
		if err != nil {
			return reminders.Selection{}, fmt.Errorf("bulk_send_reminders: today %q: %w", today, err)
		}
		// Overdue by n days: due on or before today minus n (due today is 0 days overdue).
		sel.DueBy = t.AddDate(0, 0, -*a.Filter.MinDaysOverdue).Format(time.DateOnly)
	}
	return sel, nil
}

// checkSelected refuses a selection that names a draft that does not exist (draftIds) or
// holds more drafts than a bulk send takes (filter).
func (a *bulkArgs) checkSelected(drafts []reminders.Record) error {
	if a.Filter != nil {
		if len(drafts) > reminders.MaxBulk {
			return &failure.Error{Code: reminders.CodeBulkTooLarge, Field: argFilter, Message: fmt.Sprintf(
				"selects more than %d open drafts, more than one bulk send takes; narrow it (customerIds, minDaysOverdue, tone) and send the rest in another call", reminders.MaxBulk)}
		}
		return nil
	}
	if len(drafts) == len(a.DraftIDs) {
		return nil
	}
	found := make(map[string]bool, len(drafts))
	for _, d := range drafts {
		found[d.ID] = true
	}
	for i, id := range a.DraftIDs {
		if !found[id] {
			return &failure.Error{Code: reminders.CodeDraftNotFound, Field: argDraftIDs + "[" + strconv.Itoa(i) + "]", Message: "names no draft; nothing was done"}
		}
	}
	return nil
}

// warnings are what a person should know of p before it is sent: counts only, never a name
// or an address.
func (p *bulkPlan) warnings() []string {
	w := []string{}
	if p.fallback > 0 {
		w = append(w, fmt.Sprintf("%s no first name (their name has no letter): the message opens with the fallback greeting (%s).",
			count(p.fallback, "recipient has", "recipients have"), `"Olá!", "Prezado(a) cliente,", "Hello," or "Dear customer,", by language and tone`))
	}
	if n := p.skipped.Suppressed; n > 0 {
		w = append(w, fmt.Sprintf("%s to an address marked undeliverable (an earlier message to it was refused for good) and %s skipped.",
			count(n, "draft goes", "drafts go"), isAre(n)))
	}
	if n := p.skipped.DoNotContact; n > 0 {
		w = append(w, fmt.Sprintf("%s for a customer who asked not to be contacted (do_not_contact), or who shares the address of one, and %s skipped.",
			count(n, "draft is", "drafts are"), isAre(n)))
	}
	if n := p.skipped.Paused; n > 0 {
		w = append(w, fmt.Sprintf("%s for a customer whose contact is paused, or who shares the address of one, and %s skipped.",
			count(n, "draft is", "drafts are"), isAre(n)))
	}
	if n := p.skipped.Settled; n > 0 {
		w = append(w, fmt.Sprintf("%s an invoice the ledger says is paid, void or written off, and %s skipped: it is not chased.",
			count(n, "draft names", "drafts name"), isAre(n)))
	}
	if n := p.skipped.Stale; n > 0 {
		w = append(w, fmt.Sprintf("%s an invoice the ledger says is disputed, under a pending promise to pay, or owes another amount than the draft says, and %s skipped.",
			count(n, "draft names", "drafts name"), isAre(n)))
	}
	if n := p.skipped.NotInLedger; n > 0 {
		w = append(w, fmt.Sprintf("%s an invoice that is not in the ledger, whose payment cannot be checked, and %s skipped (COBRANCA_LEDGER_REQUIRED).",
			count(n, "draft names", "drafts name"), isAre(n)))
	}
	if n := p.unchecked; n > 0 {
		w = append(w, fmt.Sprintf("%s an invoice that is not in the ledger — payment cannot be checked — and %s sent all the same.",
			count(n, "draft names", "drafts name"), isAre(n)))
	}
	if n := p.skipped.NotOpen; n > 0 {
		w = append(w, fmt.Sprintf("%s of draftIds %s not open (already queued, sent, undeliverable or discarded) and %s skipped.",
			strconv.Itoa(n), isAre(n), isAre(n)))
	}
	return w
}

// count writes n with the singular or plural phrase that follows it.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// sideEffects says what sending p does, in counts.
func (p *bulkPlan) sideEffects() []string {
	n := len(p.send)
	return []string{
		fmt.Sprintf("%s sent outside cobranca through the outbox, one per draft, each once, with its own Message-ID.", count(n, "external e-mail is", "external e-mails are")),
		fmt.Sprintf("%s queued (then sent or undeliverable as delivery ends), recorded with the bulk send's id.", count(n, "draft becomes", "drafts become")),
		"1 bulk send is recorded (collections.get_bulk_send reports its queued, sent and failed counts).",
		"1 audit event of type " + bulkAuditEvent + " is written, with counts only.",
	}
}

// addresses counts the distinct addresses p sends to.
func (p *bulkPlan) addresses() int {
	_, emails := contactsOf(p.send)
	return len(emails)
}

// planChanged is the refusal of a call whose plan is not the one its dry run showed.
func planChanged(why string) *failure.Error {
	return &failure.Error{Code: failure.PlanChanged, Field: argPlanHash, Message: why + "; nothing was done. Dry-run again and cite the new planHash"}
}

// describe is the plan in words for a person: what the approval page shows.
func (p *bulkPlan) describe(samples []sampleMessage, estimate time.Duration, rule string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "send %s by e-mail in one bulk send (%s), one per reminder draft, each once; %s of the selection skipped.\n",
		count(len(p.send), "message", "messages"), count(p.addresses(), "address", "distinct addresses"), count(p.skipped.total(), "draft", "drafts"))
	if w := p.warnings(); len(w) > 0 {
		b.WriteString("Warnings:\n")
		for _, s := range w {
			b.WriteString("- " + s + "\n")
		}
	}
	if len(samples) > 0 {
		fmt.Fprintf(&b, "Sample messages (%d of %d):\n", len(samples), len(p.send))
		for i, m := range samples {
			fmt.Fprintf(&b, "%d. To %s — Subject: %s\n", i+1, quote(m.To), quote(m.Subject))
			for line := range strings.Lines(m.PreviewText) {
				b.WriteString("   | " + strings.TrimRight(line, "\r\n") + "\n")
			}
			writePix(&b, "   ", m.draft)
		}
	}
	b.WriteString("Side effects:\n")
	for _, s := range p.sideEffects() {
		b.WriteString("- " + s + "\n")
	}
	fmt.Fprintf(&b, "Estimated duration: %s (%s).\n", estimate.Round(time.Millisecond), rule)
	fmt.Fprintf(&b, "Plan hash: %s (the call runs only while the plan is still this one).\n", p.hash)
	return b.String()
}
