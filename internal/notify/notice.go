package notify

import (
	"fmt"
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

// Language is the language notifications are written in, a BCP 47 tag.
type Language string

// The languages of notifications.
const (
	Portuguese Language = "pt-BR"
	English    Language = "en"
)

// DefaultLanguage is Config.Language's default: the approvers are a Brazilian finance team.
const DefaultLanguage = Portuguese

// words are a notification's words in one language.
type words struct {
	// stamp writes a time.
	stamp func(time.Time) string
	// waiting: how many approvals wait (many written with %d; orMore when pendingLimit or more).
	oneWaits, manyWait, orMoreWait string
	// who: the agent and the client a person asked through.
	agent, client string
	// One approval: the subject (id, tool), the mail's lines, the chat's sentence (id, tool,
	// who, asked at, expires, waiting, link).
	subject, intro                                     string
	approval, tool, askedBy, askedAt, expires, now, do string
	chat                                               string
	// A digest: the subject (folded), the mail's lines, the chat's sentence (folded, from, to,
	// after the told, waiting, link); a phrase of two forms is one's and many's (form).
	digestSubject         [2]string
	digestIntro, window   string
	told, folded, open    string
	digestChat, afterTold [2]string
}

// brasilia is the time the Portuguese notifications give, as the console's pages do: UTC−3,
// with no daylight saving since 2019, fixed so that no time zone database is needed.
var brasilia = time.FixedZone("BRT", -3*60*60)

var languages = map[Language]*words{
	English: {
		stamp:    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		oneWaits: "1 approval waits for a decision", manyWait: "%d approvals wait for a decision", orMoreWait: "%d or more approvals wait for a decision",
		agent: "agent", client: "client",
		subject: "[cobranca] Approval %s waits: %s", intro: "A call waits for a person's approval.",
		approval: "Approval", tool: "Tool", askedBy: "Asked by", askedAt: "Asked at", expires: "Expires", now: "Now", do: "Approve or reject",
		chat:          "Approval %s waits: %s, asked by %s at %s, expires %s; %s. Approve or reject: %s",
		digestSubject: [2]string{"[cobranca] 1 more approval asked for", "[cobranca] %d more approvals asked for"},
		digestIntro:   "More approvals were asked for than are told one by one.", window: "Window: %s to %s",
		told: "Told one by one", folded: "Asked for after them", open: "Open the inbox",
		digestChat: [2]string{"1 more approval was asked for from %s to %s (%s); %s. Open the inbox: %s",
			"%d more approvals were asked for from %s to %s (%s); %s. Open the inbox: %s"},
		afterTold: [2]string{"after the first, told on its own", "after the %d told one by one"},
	},
	// "aplicativo", not "cliente": to a finance team a cliente is a customer, and the OAuth
	// client is the app the person asked through.
	Portuguese: {
		stamp: func(t time.Time) string {
			return t.In(brasilia).Format("02/01/2006 15:04") + " (horário de Brasília)"
		},
		oneWaits: "1 aprovação aguarda decisão", manyWait: "%d aprovações aguardam decisão", orMoreWait: "%d ou mais aprovações aguardam decisão",
		agent: "agente", client: "aplicativo",
		subject: "[cobranca] Aprovação %s aguarda: %s", intro: "Uma chamada aguarda a aprovação de uma pessoa.",
		approval: "Aprovação", tool: "Ferramenta", askedBy: "Pedida por", askedAt: "Pedida em", expires: "Expira em", now: "Agora", do: "Aprovar ou rejeitar",
		chat:          "Aprovação %s aguarda: %s, pedida por %s em %s, expira em %s; %s. Aprovar ou rejeitar: %s",
		digestSubject: [2]string{"[cobranca] Mais 1 aprovação pedida", "[cobranca] Mais %d aprovações pedidas"},
		digestIntro:   "Foram pedidas mais aprovações do que as avisadas uma a uma.", window: "Janela: de %s a %s",
		told: "Avisadas uma a uma", folded: "Pedidas depois delas", open: "Abrir as aprovações",
		digestChat: [2]string{"Mais 1 aprovação foi pedida de %s a %s (%s); %s. Abrir as aprovações: %s",
			"Mais %d aprovações foram pedidas de %s a %s (%s); %s. Abrir as aprovações: %s"},
		afterTold: [2]string{"além da primeira, avisada sozinha", "além das %d primeiras, avisadas uma a uma"},
	},
}

// form picks, of a phrase's forms, one's (n == 1) or many's, and writes n in it.
func form(forms [2]string, n int64) string {
	if n == 1 {
		return strings.ReplaceAll(forms[0], "%d", "1")
	}
	return strings.ReplaceAll(forms[1], "%d", strconv.FormatInt(n, 10))
}

// waiting says how many wait.
func (nt Notice) waiting(w *words) string {
	switch {
	case nt.Waiting >= pendingLimit:
		return fmt.Sprintf(w.orMoreWait, pendingLimit)
	case nt.Waiting == 1:
		return w.oneWaits
	}
	return fmt.Sprintf(w.manyWait, nt.Waiting)
}

// who says who asked: the person (subject), and the agent and client they asked through.
func (nt Notice) who(w *words) string {
	r := nt.Requester
	s := clean(r.Subject)
	var via []string
	if r.Actor != "" {
		via = append(via, w.agent+" "+clean(r.Actor))
	}
	if r.Client != "" {
		via = append(via, w.client+" "+clean(r.Client))
	}
	if len(via) > 0 {
		s += " (" + strings.Join(via, ", ") + ")"
	}
	return s
}

// words are lang's words; an unknown language (New refuses it) is written in the default.
func (lang Language) words() *words {
	if w, ok := languages[lang]; ok {
		return w
	}
	return languages[DefaultLanguage]
}

// Mail is the e-mail's subject and text, in lang.
func (nt Notice) Mail(lang Language) (subject, text string) {
	w := lang.words()
	var b strings.Builder
	line := func(label, value string) { b.WriteString(label + ": " + value + "\n") }
	if nt.Digest {
		b.WriteString(w.digestIntro + "\n\n")
		b.WriteString(fmt.Sprintf(w.window, w.stamp(nt.From), w.stamp(nt.To)) + "\n")
		line(w.told, strconv.FormatInt(nt.Told, 10))
		line(w.folded, strconv.FormatInt(nt.Folded, 10))
		line(w.now, nt.waiting(w)+"\n")
		line(w.open, nt.Link)
		return form(w.digestSubject, nt.Folded), b.String()
	}
	b.WriteString(w.intro + "\n\n")
	line(w.approval, clean(nt.Approval))
	line(w.tool, clean(nt.Tool))
	line(w.askedBy, nt.who(w))
	line(w.askedAt, w.stamp(nt.Created))
	line(w.expires, w.stamp(nt.Expires))
	line(w.now, nt.waiting(w)+"\n")
	line(w.do, nt.Link)
	return fmt.Sprintf(w.subject, clean(nt.Approval), clean(nt.Tool)), b.String()
}

// Chat is the webhook's message, in lang: one paragraph, for a chat.
func (nt Notice) Chat(lang Language) string {
	w := lang.words()
	if nt.Digest {
		return fmt.Sprintf(form(w.digestChat, nt.Folded), w.stamp(nt.From), w.stamp(nt.To), form(w.afterTold, nt.Told), nt.waiting(w), nt.Link)
	}
	return fmt.Sprintf(w.chat, clean(nt.Approval), clean(nt.Tool), nt.who(w), w.stamp(nt.Created), w.stamp(nt.Expires), nt.waiting(w), nt.Link)
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
