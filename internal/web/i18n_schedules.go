package web

import (
	"fmt"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/schedules"
)

// scheduleTexts are the schedules pages' words in one language (texts.Schedules; a page's
// template reads them as $s).
type scheduleTexts struct {
	Title, ScheduleTitle, Intro, FilterLabel, AllStates, Show, Caption, Name, State  string
	Steps, EndDate, Created, NoSchedules, BackToSchedules, BackToSchedule            string
	Details, StepsCaption, Step, When, Tone, Language, Template, Audience, Caps      string
	Window, CreatedBy, PausedBy, ResumedBy, Never, At                                string
	NextHeading, NextIntro, IfResumed, NotBusinessDay, PastEnd, Messages, Invoices   string
	Skipped, SkipsCaption, Reason, Count, SamplesCaption, Customer, Total, NoMessage string
	ActionsHeading, Pause, PauseNote, Resume, ResumeConfirm, ResumeNote              string
	ResumeNeedsApprover, EndedNote, ActionsNote, Preview, PreviewNote, ResumePreview string
	States                                                                           map[schedules.State]string
	Tones, Languages, SkipReasons                                                    map[string]string
	// The latest batches: Outcomes by outcome (and "sent"), ApprovalStates by the state an
	// approval reads now, DraftSkipReasons by a bulk send's skip reasons' JSON names.
	BatchesHeading, BatchesCaption, NoBatches, Day, Outcome, Approval, Recipients, Drafts string
	BulkSend, LeftOut, NoApproval, ApproveBefore, PlanSkips, BulkSkips, SendSkips, None   string
	Outcomes, DraftSkipReasons                                                            map[string]string
	ApprovalStates                                                                        map[approval.State]string
	// The words the schedule is written in (Offset, WindowWords, AudienceWords): formats of
	// fmt, days from Sunday (time.Weekday's order).
	OnDue, BeforeOne, BeforeMany, AfterOne, AfterMany string
	WindowFormat, DaysRange, And                      string
	Days                                              [7]string
	Everyone, CustomersAre, MoreCustomers             string
	OpenFrom, OpenUpTo, LateFrom, LateUpTo            string
	PerCustomer, PerBatch                             string
}

var schedulesEnglish = scheduleTexts{
	Title: "Schedules", ScheduleTitle: "Collection schedule",
	Intro: "The collection schedules: which open invoices get a reminder, at which step, when. A schedule prepares " +
		"a batch each business day for a person to approve; it never sends on its own.",
	FilterLabel: "State", AllStates: "Every state", Show: "Show", Caption: "Collection schedules, the newest first",
	Name: "Name", State: "State", Steps: "Steps", EndDate: "Runs until", Created: "Created",
	NoSchedules: "No schedule in this state.", BackToSchedules: "Back to the schedules", BackToSchedule: "Back to the schedule",
	Details: "The schedule", StepsCaption: "The steps, in order", Step: "Step", When: "When", Tone: "Tone", Language: "Language",
	Template: "Template", Audience: "Audience", Caps: "Caps", Window: "Send window",
	CreatedBy: "Created by", PausedBy: "Last paused by", ResumedBy: "Last resumed by", Never: "never", At: "at",
	NextHeading:    "Next batch",
	NextIntro:      "What the batch of %s would prepare, read from the ledger now. Nothing is prepared until that day, and nothing is sent until a person approves the batch.",
	IfResumed:      "The schedule is paused: this is what its batch would prepare were it resumed now.",
	NotBusinessDay: "That day is not a business day: no batch.", PastEnd: "The schedule ends before that day: it prepares nothing more.",
	Messages: "Messages", Invoices: "Invoices", Skipped: "Left out",
	SkipsCaption: "Invoices left out of the batch, by reason", Reason: "Reason", Count: "Invoices",
	SamplesCaption: "The batch's first messages (their text is written when the batch is prepared)", Customer: "Customer", Total: "Total",
	NoMessage:      "The batch would prepare no message.",
	ActionsHeading: "Pause or resume", Pause: "Pause the schedule",
	PauseNote:           "Pausing stops the schedule at once: from the next batch on it prepares nothing until a person resumes it.",
	Resume:              "Resume the schedule",
	ResumeConfirm:       "I have read the next batch above: prepare this schedule's batches again, from the next business day on.",
	ResumeNote:          "Resuming is a high-risk action: its batches go to customers once approved. It is recorded in the audit trail with your name.",
	ResumeNeedsApprover: "Resuming needs the approver role (collections.approver): ask a person who holds it.",
	Preview:             "Preview the next batch",
	PreviewNote:         "The preview reads every invoice of the schedule's audience in the ledger now: it may take a few seconds.",
	ResumePreview:       "To resume the schedule, preview its next batch first: the resume form comes under it.",
	EndedNote:           "The schedule ended on %s: it cannot be resumed; create another.",
	ActionsNote:         "Pausing a schedule needs the operator or approver role; resuming it, the approver role.",
	States:              map[schedules.State]string{schedules.Active: "active", schedules.Paused: "paused"},
	Tones:               map[string]string{"friendly": "friendly", "firm": "firm"},
	Languages:           map[string]string{"pt-BR": "Portuguese (Brazil)", "en": "English"},
	SkipReasons: map[string]string{"paid": "paid", "void": "void", "writtenOff": "written off", "disputed": "disputed",
		"promisePending": "under a promise to pay", "noContact": "no customer record to write to",
		"doNotContact": "customer asked not to be contacted", "customerPaused": "customer's contact paused",
		"capCustomer": "customer's cap for 7 days reached", "capBatch": "batch's cap reached",
		"pastEndDate": "past the schedule's end date", "schedulePaused": "schedule paused"},
	BatchesHeading: "Latest batches",
	BatchesCaption: "The schedule's batches, the newest first (its latest %s at most), with their approvals",
	NoBatches:      "No batch yet: the schedule prepares its first on its next business day, inside its send window.",
	Day:            "Day", Outcome: "Outcome", Approval: "Approval", Recipients: "Recipients", Drafts: "Drafts", BulkSend: "Bulk send",
	LeftOut: "Left out", NoApproval: "none asked", ApproveBefore: "approve before %s", None: "nothing",
	PlanSkips: "Invoices left out of the plan", BulkSkips: "Drafts prepared but not sendable",
	SendSkips: "Drafts left out at sending because",
	Outcomes: map[string]string{schedules.BatchOpened: "prepared: its bulk send waits for approval", batchSent: "prepared and sent",
		schedules.BatchLapsed: "lapsed: its drafts discarded, nothing sent", schedules.BatchEmpty: "nothing to send: no approval asked",
		schedules.BatchClosed: "nothing prepared: the schedule was paused or past its end date"},
	ApprovalStates: map[approval.State]string{approval.Pending: "waiting for a decision",
		approval.Approved: "approved: sent as soon as the send window is open", approval.Executed: "approved and sent",
		approval.Rejected: "rejected", approval.Expired: "expired"},
	DraftSkipReasons: map[string]string{"notOpen": "the draft was no longer open", "doNotContact": "the customer asked not to be contacted",
		"paused": "the customer's contact was paused", "suppressed": "the address refused an earlier message for good",
		"settled": "an invoice was paid, void or written off", "stale": "an invoice was disputed, promised or owed another amount",
		"notInLedger": "an invoice was not in the ledger"},
	OnDue: "on the due date (the next business day when it is not one)", BeforeOne: "1 business day before the due date",
	BeforeMany: "%s business days before the due date", AfterOne: "1 business day after the due date", AfterMany: "%s business days after the due date",
	WindowFormat: "%s to %s, %s, in %s time; never on a bank holiday", DaysRange: "%s to %s", And: " and ",
	Days:     [7]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"},
	Everyone: "Every open invoice", CustomersAre: "The invoices of the customers %s", MoreCustomers: "and %s more",
	OpenFrom: "Open amount at least %s", OpenUpTo: "Open amount at most %s",
	LateFrom: "At least %s business days overdue", LateUpTo: "At most %s business days overdue",
	PerCustomer: "At most %s messages to a customer in any 7 days", PerBatch: "At most %s messages in a batch",
}

var schedulesPortuguese = scheduleTexts{
	Title: "Réguas", ScheduleTitle: "Régua de cobrança",
	Intro: "As réguas de cobrança: quais títulos em aberto recebem um lembrete, em que etapa, quando. Uma régua prepara " +
		"um lote a cada dia útil para uma pessoa aprovar; ela nunca envia sozinha.",
	FilterLabel: "Situação", AllStates: "Todas as situações", Show: "Mostrar", Caption: "Réguas de cobrança, as mais recentes primeiro",
	Name: "Nome", State: "Situação", Steps: "Etapas", EndDate: "Vale até", Created: "Criada em",
	NoSchedules: "Nenhuma régua nesta situação.", BackToSchedules: "Voltar às réguas", BackToSchedule: "Voltar à régua",
	Details: "A régua", StepsCaption: "As etapas, em ordem", Step: "Etapa", When: "Quando", Tone: "Tom", Language: "Idioma",
	Template: "Modelo", Audience: "Público", Caps: "Limites", Window: "Janela de envio",
	CreatedBy: "Criada por", PausedBy: "Pausada por último por", ResumedBy: "Retomada por último por", Never: "nunca", At: "em",
	NextHeading:    "Próximo lote",
	NextIntro:      "O que o lote de %s prepararia, lido da carteira agora. Nada é preparado antes desse dia, e nada é enviado até uma pessoa aprovar o lote.",
	IfResumed:      "A régua está pausada: isto é o que o lote dela prepararia se fosse retomada agora.",
	NotBusinessDay: "Esse dia não é dia útil: não há lote.", PastEnd: "A régua termina antes desse dia: não prepara mais nada.",
	Messages: "Mensagens", Invoices: "Títulos", Skipped: "Deixados de fora",
	SkipsCaption: "Títulos deixados fora do lote, por motivo", Reason: "Motivo", Count: "Títulos",
	SamplesCaption: "As primeiras mensagens do lote (o texto é escrito quando o lote é preparado)", Customer: "Cliente", Total: "Total",
	NoMessage:      "O lote não prepararia nenhuma mensagem.",
	ActionsHeading: "Pausar ou retomar", Pause: "Pausar a régua",
	PauseNote:           "Pausar para a régua na hora: a partir do próximo lote ela não prepara nada até uma pessoa retomá-la.",
	Resume:              "Retomar a régua",
	ResumeConfirm:       "Li o próximo lote acima: preparar de novo os lotes desta régua, a partir do próximo dia útil.",
	ResumeNote:          "Retomar é uma ação de alto risco: os lotes vão aos clientes depois de aprovados. Fica registrado na trilha de auditoria com o seu nome.",
	ResumeNeedsApprover: "Retomar exige o papel de aprovação (collections.approver): peça a uma pessoa que o tenha.",
	Preview:             "Prever o próximo lote",
	PreviewNote:         "A previsão lê na carteira agora todas as faturas do público da régua: pode levar alguns segundos.",
	ResumePreview:       "Para retomar a régua, preveja antes o próximo lote: o formulário de retomada vem abaixo dele.",
	EndedNote:           "A régua terminou em %s: não pode ser retomada; crie outra.",
	ActionsNote:         "Pausar uma régua exige o papel de operação ou de aprovação; retomá-la, o papel de aprovação.",
	States:              map[schedules.State]string{schedules.Active: "ativa", schedules.Paused: "pausada"},
	Tones:               map[string]string{"friendly": "cordial", "firm": "firme"},
	Languages:           map[string]string{"pt-BR": "português (Brasil)", "en": "inglês"},
	SkipReasons: map[string]string{"paid": "pago", "void": "cancelado", "writtenOff": "baixado", "disputed": "contestado",
		"promisePending": "com promessa de pagamento", "noContact": "sem cadastro do cliente para escrever",
		"doNotContact": "cliente pediu para não ser contatado", "customerPaused": "contato do cliente pausado",
		"capCustomer": "limite de 7 dias do cliente atingido", "capBatch": "limite do lote atingido",
		"pastEndDate": "depois do fim da régua", "schedulePaused": "régua pausada"},
	BatchesHeading: "Últimos lotes",
	BatchesCaption: "Os lotes da régua, os mais recentes primeiro (os últimos %s no máximo), com as suas aprovações",
	NoBatches:      "Nenhum lote ainda: a régua prepara o primeiro no próximo dia útil, dentro da janela de envio.",
	Day:            "Dia", Outcome: "Resultado", Approval: "Aprovação", Recipients: "Destinatários", Drafts: "Rascunhos", BulkSend: "Envio em lote",
	LeftOut: "Deixados de fora", NoApproval: "nenhuma pedida", ApproveBefore: "aprovar até %s", None: "nada",
	PlanSkips: "Títulos deixados fora do plano", BulkSkips: "Rascunhos preparados mas não enviáveis",
	SendSkips: "Rascunhos deixados de fora no envio porque",
	Outcomes: map[string]string{schedules.BatchOpened: "preparado: o envio em lote aguarda aprovação", batchSent: "preparado e enviado",
		schedules.BatchLapsed: "caducou: rascunhos descartados, nada enviado", schedules.BatchEmpty: "nada a enviar: nenhuma aprovação pedida",
		schedules.BatchClosed: "nada preparado: a régua estava pausada ou depois do fim"},
	ApprovalStates: map[approval.State]string{approval.Pending: "aguardando decisão",
		approval.Approved: "aprovada: enviada assim que a janela de envio estiver aberta", approval.Executed: "aprovada e enviada",
		approval.Rejected: "rejeitada", approval.Expired: "expirada"},
	DraftSkipReasons: map[string]string{"notOpen": "o rascunho não estava mais aberto", "doNotContact": "o cliente pediu para não ser contatado",
		"paused": "o contato do cliente estava pausado", "suppressed": "o endereço recusou de vez uma mensagem anterior",
		"settled": "um título foi pago, cancelado ou baixado", "stale": "um título foi contestado, teve promessa de pagamento ou passou a dever outro valor",
		"notInLedger": "um título não estava na carteira"},
	OnDue: "no dia do vencimento (no dia útil seguinte, se não for um)", BeforeOne: "1 dia útil antes do vencimento",
	BeforeMany: "%s dias úteis antes do vencimento", AfterOne: "1 dia útil depois do vencimento", AfterMany: "%s dias úteis depois do vencimento",
	WindowFormat: "das %s às %s, %s, no fuso %s; nunca em feriado bancário", DaysRange: "de %s a %s", And: " e ",
	Days:     [7]string{"domingo", "segunda", "terça", "quarta", "quinta", "sexta", "sábado"},
	Everyone: "Todos os títulos em aberto", CustomersAre: "Os títulos dos clientes %s", MoreCustomers: "e mais %s",
	OpenFrom: "Valor em aberto de pelo menos %s", OpenUpTo: "Valor em aberto de no máximo %s",
	LateFrom: "Vencidos há pelo menos %s dias úteis", LateUpTo: "Vencidos há no máximo %s dias úteis",
	PerCustomer: "No máximo %s mensagens a um cliente em quaisquer 7 dias", PerBatch: "No máximo %s mensagens por lote",
}

// Offset is a step's offset from the due date in words.
func (t *texts) Offset(n int) string {
	s := &t.Schedules
	switch {
	case n == 0:
		return s.OnDue
	case n == -1:
		return s.BeforeOne
	case n < 0:
		return fmt.Sprintf(s.BeforeMany, t.Int(-n))
	case n == 1:
		return s.AfterOne
	}
	return fmt.Sprintf(s.AfterMany, t.Int(n))
}

// WindowWords is a send window in words: its hours, its days (a run of three or more as a
// range), its zone, and the holidays it never opens on.
func (t *texts) WindowWords(w calendar.Window) string {
	s := &t.Schedules
	// Monday first, as a week is read.
	order := func(d time.Weekday) int { return (int(d) + 6) % 7 }
	run := len(w.Days) >= 3
	for i := 1; i < len(w.Days) && run; i++ {
		run = order(w.Days[i]) == order(w.Days[i-1])+1
	}
	var days string
	if run {
		days = fmt.Sprintf(s.DaysRange, s.Days[w.Days[0]], s.Days[w.Days[len(w.Days)-1]])
	} else {
		names := make([]string, len(w.Days))
		for i, d := range w.Days {
			names[i] = s.Days[d]
		}
		days = listWords(names, s.And)
	}
	clock := func(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }
	return fmt.Sprintf(s.WindowFormat, clock(w.Open), clock(w.Close), days, w.Zone.String())
}

// listWords is a, b and c.
func listWords(items []string, and string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + and + items[len(items)-1]
}

// maxAudienceCustomers is how many of the audience's customer ids the page names.
const maxAudienceCustomers = 20

// AudienceWords are the audience's conditions in words, one a line.
func (t *texts) AudienceWords(a schedules.Audience) []string {
	s := &t.Schedules
	if a.All {
		return []string{s.Everyone}
	}
	var out []string
	if len(a.CustomerIDs) > 0 {
		ids := a.CustomerIDs[:min(len(a.CustomerIDs), maxAudienceCustomers)]
		named := strings.Join(ids, ", ")
		if more := len(a.CustomerIDs) - len(ids); more > 0 {
			named += " " + fmt.Sprintf(s.MoreCustomers, t.Int(more))
		}
		out = append(out, fmt.Sprintf(s.CustomersAre, named))
	}
	if a.MinOpenCents != nil {
		out = append(out, fmt.Sprintf(s.OpenFrom, t.Money(*a.MinOpenCents)))
	}
	if a.MaxOpenCents != nil {
		out = append(out, fmt.Sprintf(s.OpenUpTo, t.Money(*a.MaxOpenCents)))
	}
	if a.MinBusinessDaysLate != nil {
		out = append(out, fmt.Sprintf(s.LateFrom, t.Int(*a.MinBusinessDaysLate)))
	}
	if a.MaxBusinessDaysLate != nil {
		out = append(out, fmt.Sprintf(s.LateUpTo, t.Int(*a.MaxBusinessDaysLate)))
	}
	return out
}

// CapsWords are the caps in words.
func (t *texts) CapsWords(c *schedules.Caps) []string {
	return []string{fmt.Sprintf(t.Schedules.PerCustomer, t.Int(c.PerCustomer7Days)), fmt.Sprintf(t.Schedules.PerBatch, t.Int(c.PerBatch))}
}

// Sprintf is fmt.Sprintf for the templates: a page's words with a value in them.
func (t *texts) Sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
