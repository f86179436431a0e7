package web

import (
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/reminders"
)

// messagesTexts are the words of the customers and outbox pages (texts.Messages; a page's
// template reads them as $m, $.T.Messages).
type messagesTexts struct {
	CustomersTitle, CustomerTitle, OutboxTitle string
	// The customers page.
	CustomersIntro, CustomersCaption, Name, Email, ContactStatus, SetBy, SetAt string
	FilterLabel, AllStatuses, Show, NoCustomers, Until, PauseEnded, NeverSet   string
	Statuses                                                                   map[customers.Status]string
	// A customer's page.
	BackToCustomers, DraftsHeading, DraftsCaption, SendsHeading, SendsCaption string
	Subject, Created, Queued, QueuedBy, Outcome, Reply, Invoices, Total       string
	NoDrafts, NoSends, BodiesWithheld, Body, SendsNote                        string
	DraftStates                                                               map[reminders.State]string
	// The outbox page.
	OutboxIntro, Tabs, Customer, NoneInState, DepthHeading, AtLeast          string
	BulksHeading, BulksCaption, Bulk, Progress, ProgressOf, Skipped, NoBulks string
	TabCaptions                                                              map[reminders.State]string
}

var messagesEnglish = messagesTexts{
	CustomersTitle: "Customers", CustomerTitle: "Customer", OutboxTitle: "Outbox",
	CustomersIntro:   "Who may be written to: each customer's contact status, and who set it, when and why.",
	CustomersCaption: "Customers, by id", Name: "Name", Email: "E-mail", ContactStatus: "Contact status", SetBy: "Set by", SetAt: "Set at",
	FilterLabel: "Contact status", AllStatuses: "Every status", Show: "Show", NoCustomers: "No customer has this contact status.",
	Until: "until", PauseEnded: "pause ended on", NeverSet: "never set",
	Statuses:        map[customers.Status]string{customers.Contactable: "contactable", customers.Paused: "paused", customers.DoNotContact: "do not contact"},
	BackToCustomers: "Back to the customers", DraftsHeading: "Drafts", DraftsCaption: "The customer's reminders in every state, the latest first",
	SendsHeading: "Sends", SendsCaption: "The customer's reminders sent, the latest queued first",
	Subject: "Subject", Created: "Written at", Queued: "Queued at", QueuedBy: "Sent by", Outcome: "Delivery", Reply: "Mail server's reply",
	Invoices: "Invoices", Total: "Total",
	NoDrafts: "No reminder was written to this customer.", NoSends: "No reminder was sent to this customer.",
	BodiesWithheld: "The messages' bodies are shown only to the operator, approver and write-off roles: yours reads their subjects, states and dates.",
	Body:           "Message", SendsNote: "The latest 25; every send is among the drafts too.",
	DraftStates: map[reminders.State]string{reminders.Draft: "draft", reminders.Discarded: "discarded", reminders.Queued: "queued",
		reminders.Sent: "sent", reminders.Undeliverable: "undeliverable"},
	OutboxIntro: "The reminders people approved sending: waiting in the outbox, accepted by the mail server, or refused by it for good.",
	Tabs:        "Delivery states", Customer: "Customer", NoneInState: "No reminder is in this state.",
	DepthHeading: "Outbox depth", AtLeast: "at least",
	BulksHeading: "Bulk sends", BulksCaption: "Bulk sends, the latest first, with their progress", Bulk: "Bulk send",
	Progress: "Progress", ProgressOf: "of", Skipped: "skipped", NoBulks: "No bulk send was made.",
	TabCaptions: map[reminders.State]string{reminders.Queued: "Reminders waiting in the outbox, the latest queued first",
		reminders.Sent:          "Reminders the mail server accepted, the latest queued first",
		reminders.Undeliverable: "Reminders the mail server refused for good, with its reply code, the latest queued first"},
}

var messagesPortuguese = messagesTexts{
	CustomersTitle: "Clientes", CustomerTitle: "Cliente", OutboxTitle: "Caixa de saída",
	CustomersIntro:   "Quem pode receber mensagens: a situação de contato de cada cliente, e quem a definiu, quando e por quê.",
	CustomersCaption: "Clientes, por identificador", Name: "Nome", Email: "E-mail", ContactStatus: "Situação de contato", SetBy: "Definida por", SetAt: "Definida em",
	FilterLabel: "Situação de contato", AllStatuses: "Todas as situações", Show: "Mostrar", NoCustomers: "Nenhum cliente tem esta situação de contato.",
	Until: "até", PauseEnded: "pausa encerrada em", NeverSet: "nunca definida",
	Statuses:        map[customers.Status]string{customers.Contactable: "contatável", customers.Paused: "pausado", customers.DoNotContact: "não contatar"},
	BackToCustomers: "Voltar aos clientes", DraftsHeading: "Rascunhos", DraftsCaption: "Os lembretes do cliente em todas as situações, os mais recentes primeiro",
	SendsHeading: "Envios", SendsCaption: "Os lembretes enviados ao cliente, os últimos postos na fila primeiro",
	Subject: "Assunto", Created: "Escrito em", Queued: "Posto na fila em", QueuedBy: "Enviado por", Outcome: "Entrega", Reply: "Resposta do servidor de e-mail",
	Invoices: "Faturas", Total: "Total",
	NoDrafts: "Nenhum lembrete foi escrito para este cliente.", NoSends: "Nenhum lembrete foi enviado a este cliente.",
	BodiesWithheld: "O texto das mensagens é mostrado só aos papéis de operação, aprovação e baixa: o seu lê assuntos, situações e datas.",
	Body:           "Mensagem", SendsNote: "Os 25 mais recentes; todo envio está também entre os rascunhos.",
	DraftStates: map[reminders.State]string{reminders.Draft: "rascunho", reminders.Discarded: "descartado", reminders.Queued: "na fila",
		reminders.Sent: "enviado", reminders.Undeliverable: "não entregável"},
	OutboxIntro: "Os lembretes que pessoas aprovaram enviar: aguardando na caixa de saída, aceitos pelo servidor de e-mail, ou recusados por ele em definitivo.",
	Tabs:        "Situações de entrega", Customer: "Cliente", NoneInState: "Nenhum lembrete está nesta situação.",
	DepthHeading: "Profundidade da caixa de saída", AtLeast: "pelo menos",
	BulksHeading: "Envios em lote", BulksCaption: "Envios em lote, os mais recentes primeiro, com o seu andamento", Bulk: "Envio em lote",
	Progress: "Andamento", ProgressOf: "de", Skipped: "pulados", NoBulks: "Nenhum envio em lote foi feito.",
	TabCaptions: map[reminders.State]string{reminders.Queued: "Lembretes aguardando na caixa de saída, os últimos postos na fila primeiro",
		reminders.Sent:          "Lembretes aceitos pelo servidor de e-mail, os últimos postos na fila primeiro",
		reminders.Undeliverable: "Lembretes recusados em definitivo pelo servidor de e-mail, com o código da resposta, os últimos postos na fila primeiro"},
}

// StateName is the name of draft state s.
func (m messagesTexts) StateName(s string) string { return m.DraftStates[reminders.State(s)] }

// Int is n as Count writes it.
func (t *texts) Int(n int) string { return t.Count(int64(n)) }
