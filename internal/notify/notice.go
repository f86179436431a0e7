package notify

import (
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
)

// Notice is everything a notification says. It has no field that could hold customer data:
// no preview, no arguments — an approval's id, its tool's name, who asked, times and counts.
type Notice struct {
	// One approval: its id, tool, requester and times.
	Approval         string
	Tool             string
	Requester        approval.Requester
	Created, Expires time.Time

	// A digest: the window [From, To), whose first Told approvals were told one by one and
	// Folded more are told here.
	Digest       bool
	From, To     time.Time
	Told, Folded int64

	// Waiting is how many approvals wait for a decision now (at most pendingLimit counted).
	Waiting int64
	// Link is the approval's page, or for a digest the console's inbox.
	Link string
}

// stamp writes t as the notifications do: UTC, to the minute.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// waiting says how many wait.
func (nt Notice) waiting() string {
	switch {
	case nt.Waiting >= pendingLimit:
		return strconv.Itoa(pendingLimit) + " or more approvals wait for a decision"
	case nt.Waiting == 1:
		return "1 approval waits for a decision"
	}
	return strconv.FormatInt(nt.Waiting, 10) + " approvals wait for a decision"
}

// who says who asked: the person (subject), and the agent and client they asked through.
func (nt Notice) who() string {
	r := nt.Requester
	s := clean(r.Subject)
	var via []string
	if r.Actor != "" {
		via = append(via, "agent "+clean(r.Actor))
	}
	if r.Client != "" {
		via = append(via, "client "+clean(r.Client))
	}
	if len(via) > 0 {
		s += " (" + strings.Join(via, ", ") + ")"
	}
	return s
}

// Mail is the e-mail's subject and text.
func (nt Notice) Mail() (subject, text string) {
	var b strings.Builder
	if nt.Digest {
		subject = "[cobranca] " + strconv.FormatInt(nt.Folded, 10) + " more approvals asked for"
		b.WriteString("More approvals were asked for than are told one by one.\n\n")
		b.WriteString("Window: " + stamp(nt.From) + " to " + stamp(nt.To) + "\n")
		b.WriteString("Told one by one: " + strconv.FormatInt(nt.Told, 10) + "\n")
		b.WriteString("Asked for after them: " + strconv.FormatInt(nt.Folded, 10) + "\n")
		b.WriteString("Now: " + nt.waiting() + "\n\n")
		b.WriteString("Open the inbox: " + nt.Link + "\n")
		return subject, b.String()
	}
	subject = "[cobranca] Approval " + clean(nt.Approval) + " waits: " + clean(nt.Tool)
	b.WriteString("A call waits for a person's approval.\n\n")
	b.WriteString("Approval: " + clean(nt.Approval) + "\n")
	b.WriteString("Tool: " + clean(nt.Tool) + "\n")
	b.WriteString("Asked by: " + nt.who() + "\n")
	b.WriteString("Asked at: " + stamp(nt.Created) + "\n")
	b.WriteString("Expires: " + stamp(nt.Expires) + "\n")
	b.WriteString("Now: " + nt.waiting() + "\n\n")
	b.WriteString("Approve or reject: " + nt.Link + "\n")
	return subject, b.String()
}

// Chat is the webhook's message: one paragraph, for a chat.
func (nt Notice) Chat() string {
	if nt.Digest {
		return strconv.FormatInt(nt.Folded, 10) + " more approvals were asked for from " + stamp(nt.From) + " to " + stamp(nt.To) +
			" (after the " + strconv.FormatInt(nt.Told, 10) + " told one by one); " + nt.waiting() + ". Open the inbox: " + nt.Link
	}
	return "Approval " + clean(nt.Approval) + " waits: " + clean(nt.Tool) + ", asked by " + nt.who() + " at " + stamp(nt.Created) +
		", expires " + stamp(nt.Expires) + "; " + nt.waiting() + ". Approve or reject: " + nt.Link
}

// maxField bounds a field a notification quotes.
const maxField = 64

// clean is s as a notification may quote it: a token's subject, actor or client id is the
// identity provider's, not ours, so it is cut to maxField bytes and every character outside a
// plain set becomes '?' — no markup a chat would read (Slack's <!channel>, links, mentions),
// no line breaks that would forge lines of the e-mail.
func clean(s string) string {
	if s == "" {
		return "?"
	}
	cut := len(s) > maxField
	if cut {
		s = s[:maxField]
	}
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("._-@:+/", c) >= 0) {
			b[i] = '?'
		}
	}
	if cut {
		return string(b) + "..."
	}
	return string(b)
}
