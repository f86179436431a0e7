package web

import (
	"golang.org/x/text/language"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/value"
	"github.com/cobranca/cobranca/internal/writeoffs"
)

// texts are a page's words in one language.
type texts struct {
	Tag, Name                                  string // the language's tag (lang=) and its name in itself
	ApprovalTitle, RefusalTitle                string
	Intro                                      string
	State, Tool, RequestedBy, ThroughAgent     string
	Client, Requested, Expires, DecidedBy      string
	Preview, SideEffects, NoSideEffects        string
	Approve, Reject, StepUpNote                string
	RoleNote, LacksRole, AgentCannot, Withheld string
	SignedInAs, AgentFor, SignOut, SignInAgain string
	BackToApproval                             string
	// LedgerNow heads what the receivables ledger says now of the call's invoices.
	LedgerNow string
	// PixQR captions the QR code of a PIX code in the preview.
	PixQR string
	// The write-off page.
	WriteOffTitle, WriteOffIntro, WriteOffSubmit       string
	InvoiceID, CustomerID, AmountCents, Reason         string
	WrittenOff, WriteOffID, WrittenOffBy, WrittenOffAt string
	WrittenOffAmount                                   string
	AnotherWriteOff, BackToWriteOff                    string
	// The layout.
	SkipToMain, Language, ConsoleNav, JustNow string
	// The console's pages.
	InboxTitle, ToolsTitle, HealthTitle string
	// The approvals inbox.
	PendingHeading, PendingCaption, Waiting, Summary, Open, Decide string
	EffectsCount, LinesCount, NonePending                          string
	Pages, FirstPage, NextPage                                     string
	DecidedHeading, DecidedCaption, DecidedAt, NoneDecided         string
	// The tools page.
	ToolsIntro, ToolsCaption, WhatItDoes, WhoApproves, StepUpHeading, Yes, No string
	Tiers, TierRules                                                          map[contract.Risk]string
	Confirmations                                                             map[contract.Confirmation]string
	BudgetsHeading, BudgetsIntro, BudgetsCaption, Budget, Allowance, SpentBy  string
	BudgetPrincipal, BudgetOrigin, BudgetWrite, BudgetCritical, Off, Burst    string
	// The health page.
	HealthIntro, HealthCaption, Metric, Value                         string
	RateLimitedNow, ApprovalsPendingNow, ApprovalOldestAge            string
	OutboxQueuedNow, OutboxRetryingNow, AuditUnsealedNow, AuditLagNow string
	// The health page's charts.
	Charts chartTexts
	// Messages are the customers and outbox pages' words (customers_i18n.go).
	Messages messagesTexts
	// The audit trail.
	AuditTitle, AuditIntro, ChainHeading, ChainSealed, ChainVerified, ChainBroken string
	VerifyChain, VerifyNote, FiltersHeading, Tier, Outcome, Person, Agent         string
	AnyOption, Since, Until, ApplyFilters, ExportLink, ExportNote                 string
	EventsHeading, EventsCaption, When, Event, Who, Seq, RequestID, Unsealed      string
	NoEvents, SearchedBack                                                        string
	States                                                                        map[approval.State]string
	// Codes says, for each refusal a page shows, what happened; a code without an entry
	// shows Unknown.
	Codes   map[failure.Code]string
	Unknown string
	// Ledger is the ledger and payments pages' words (i18n_ledger.go); Import, the import
	// page's.
	Ledger ledgerTexts
	Import importTexts
	// Schedules is the schedules pages' words (i18n_schedules.go).
	Schedules scheduleTexts
}

// supported are the pages' languages, the default first.
var supported = []texts{english, portuguese}

var matcher = language.NewMatcher([]language.Tag{language.English, language.BrazilianPortuguese})

// pick returns the language of a request: ?lang= when it names one, else the best match of
// Accept-Language, else English.
func pick(query, acceptLanguage string) *texts {
	_, i := language.MatchStrings(matcher, query, acceptLanguage)
	return &supported[i]
}

var english = texts{
	Tag: "en", Name: "English",
	ApprovalTitle: "Approve a critical call", RefusalTitle: "Not done",
	Intro: "An agent asked to run the call below. It runs only if a person approves exactly this call; nothing has happened yet.",
	State: "State", Tool: "Tool", RequestedBy: "Requested by", ThroughAgent: "through the agent",
	Client: "Client", Requested: "Requested at", Expires: "Expires at", DecidedBy: "Decided by",
	Preview: "What it will do", SideEffects: "Side effects", NoSideEffects: "None declared.",
	Approve: "Approve", Reject: "Reject",
	StepUpNote:  "Deciding needs a recent, stronger sign-in; if yours is not, you will be asked to sign in again:",
	RoleNote:    "Deciding needs one of these roles:",
	LacksRole:   "You do not hold it, so you cannot approve or reject this call: ask a person who does, or sign in as one.",
	AgentCannot: "You are signed in as an agent: only a person approves or rejects a call.",
	Withheld:    "The preview and the side effects are shown only to people who may decide this call and to the person it was asked for.",
	SignedInAs:  "Signed in as", AgentFor: "an agent:", SignOut: "Sign out", SignInAgain: "Sign in",
	BackToApproval: "Back to the approval",
	LedgerNow:      "The invoices in the receivables ledger, as of now",
	PixQR:          "The PIX QR code the message carries: the copia-e-cola string above, as the customer scans it",
	WriteOffTitle:  "Write off an invoice",
	WriteOffIntro: "Record that the invoice's debt will not be collected. Only a person with the write-off role does this, " +
		"and the write-off is permanent and audited: an invoice is written off once.",
	WriteOffSubmit: "Write off", InvoiceID: "Invoice id", CustomerID: "Customer id", AmountCents: "Amount (BRL cents)",
	Reason: "Reason", WrittenOff: "Invoice written off", WriteOffID: "Write-off", WrittenOffBy: "Written off by",
	WrittenOffAt: "Recorded at", WrittenOffAmount: "Amount written off", AnotherWriteOff: "Write off another invoice", BackToWriteOff: "Back to the write-off form",
	SkipToMain: "Skip to the content", Language: "Language", ConsoleNav: "Console", JustNow: "less than a minute",
	InboxTitle: "Approvals", ToolsTitle: "Tools", HealthTitle: "Health",
	PendingHeading: "Waiting for a decision", PendingCaption: "Calls agents asked for, waiting for a person, oldest first",
	Waiting: "Waiting", Summary: "What it does", Open: "View", Decide: "Review and decide",
	EffectsCount: "side effects", LinesCount: "preview lines", NonePending: "No call waits for a decision.",
	Pages: "Pages", FirstPage: "First page", NextPage: "Next page",
	DecidedHeading: "Decided recently", DecidedCaption: "Calls decided in the last 7 days, the latest first", DecidedAt: "Decided at",
	NoneDecided:  "No call was decided in the last 7 days.",
	ToolsIntro:   "What each tool the agents call may do, by risk tier: who approves it, and what it spends of the budgets.",
	ToolsCaption: "Tools", WhatItDoes: "What it may do", WhoApproves: "Who approves or runs it", StepUpHeading: "Recent strong sign-in", Yes: "required", No: "no",
	Tiers: map[contract.Risk]string{contract.Low: "Low risk", contract.Medium: "Medium risk", contract.High: "High risk",
		contract.Critical: "Critical", contract.Forbidden: "Forbidden to agents"},
	TierRules: map[contract.Risk]string{
		contract.Low:       "Reads, with no lasting effect: an agent runs them alone.",
		contract.Medium:    "Narrow internal changes: the client may ask its user to confirm.",
		contract.High:      "Relevant changes: the client asks its user to confirm each call.",
		contract.Critical:  "External effects, money: a person holding the role approves the exact call on the approval page, after a recent strong sign-in.",
		contract.Forbidden: "Never visible to an agent: only a person holding the role runs them, on the console or the command line.",
	},
	Confirmations: map[contract.Confirmation]string{contract.ConfirmNone: "nobody: the agent runs it", contract.ConfirmAdvised: "the client's user, if the client asks",
		contract.ConfirmInBand: "the client's user, in the chat", contract.ConfirmOutOfBand: "a person, on the approval page", contract.ConfirmHumanOnly: "a person runs it"},
	BudgetsHeading: "Budgets", BudgetsIntro: "Each call spends one unit of every budget its tier spends; a call over a budget is refused until the budget refills.",
	BudgetsCaption: "The rate limits and the tiers that spend them", Budget: "Budget", Allowance: "Allowance", SpentBy: "Spent by",
	BudgetPrincipal: "Requests per person and client", BudgetOrigin: "Requests per network address", BudgetWrite: "Changes per person and client",
	BudgetCritical: "Approvals asked for per person and client", Off: "no limit", Burst: "bursts up to",
	HealthIntro:   "What waits now, read from the store (the operator metrics).",
	HealthCaption: "Operator metrics", Metric: "Metric", Value: "Value",
	RateLimitedNow: "Requests refused for a rate limit by this server, recently", ApprovalsPendingNow: "Approvals waiting for a decision",
	ApprovalOldestAge: "The oldest has waited", OutboxQueuedNow: "Messages in the outbox not sent yet", OutboxRetryingNow: "Of them, waiting for a retry",
	AuditUnsealedNow: "Audit events not in the hash chain yet", AuditLagNow: "The oldest of them has waited",
	Charts:     chartsEnglish,
	AuditTitle: "Audit trail", AuditIntro: "Every tool call, decision and console action, newest first. The events hold no customer data: arguments and results are digests.",
	ChainHeading: "The hash chain", ChainSealed: "Every event is in the hash chain.", ChainVerified: "The chain verified", ChainBroken: "The chain is broken",
	VerifyChain: "Verify the chain", VerifyNote: "Walks the whole chain, checking each event's hash and MAC: it may take a while. Audited.",
	FiltersHeading: "Filters", Tier: "Risk tier", Outcome: "Outcome", Person: "Person", Agent: "Agent",
	AnyOption: "any", Since: "From (Brasília time)", Until: "Before (Brasília time)", ApplyFilters: "Filter",
	ExportLink: "Export as JSON Lines", ExportNote: "The sealed events these filters pick, a file that cobranca audit verify --file checks offline.",
	EventsHeading: "Events", EventsCaption: "Audit events, newest first", When: "When", Event: "Event", Who: "Who", Seq: "Seq",
	RequestID: "request", Unsealed: "not sealed yet", NoEvents: "No event matches these filters.",
	SearchedBack: "This page searched back to",
	States: map[approval.State]string{approval.Pending: "waiting for a decision", approval.Approved: "approved (waiting for the agent's retry)",
		approval.Rejected: "rejected", approval.Executed: "approved and executed", approval.Expired: "expired"},
	Messages: messagesEnglish,
	Codes: map[failure.Code]string{
		approval.CodeApproverIsAgent:           "An agent cannot approve or reject a call: only a person can. Sign in as yourself.",
		approval.CodeApproverIsRequester:       "You asked for this call (through your agent): another person must decide it.",
		approval.CodeApproverLacksRole:         "You do not hold the role deciding this call needs: a person who holds it must decide it.",
		failure.InsufficientUserAuthentication: "This decision needs a recent, stronger sign-in, and the sign-in did not provide it.",
		approval.CodeDecided:                   "This approval is no longer waiting for a decision: nothing was changed.",
		approval.CodeNotFound:                  "There is no approval with this id.",
		signin.CodeCrossOrigin:                 "The request came from another site, so it was refused. Use this site's own links and buttons.",
		signin.CodeCSRFInvalid:                 "The form's security token is missing or out of date. Reload the page and try again.",
		signin.CodeNotSignedIn:                 "You are not signed in, or your session ended. Sign in and try again.",
		signin.CodeStateInvalid:                "This sign-in does not match one started in this browser (or it was already used, or took too long). Start again from the page.",
		signin.CodeSigninFailed:                "The sign-in did not complete.",
		signin.CodeInvalidRequest:              "The request is malformed.",
		failure.Unavailable:                    "The sign-in service does not answer. Try again in a moment.",
		failure.Internal:                       "Something went wrong on our side.",
		failure.PersonRequired:                 "Only a person writes an invoice off: sign in as yourself, not as an agent.",
		failure.PersonLacksRole:                "You do not hold the role writing an invoice off needs: a person who holds it must do it.",
		writeoffs.CodeAlreadyWrittenOff:        "This invoice was already written off: an invoice is written off once. Nothing was done.",
		customers.CodeNotFound:                 "There is no customer with this id. Nothing was done.",
		failure.InvalidArguments:               "A field is not valid (see below). Nothing was done.",
		failure.IdempotencyConflict:            "This form was already sent with other values. Open the page again for a new form.",
		failure.RequestInProgress:              "This form is still being processed. Wait a moment and send it again.",
		failure.RateLimited:                    "Too many requests. Wait a moment and try again.",
		codeNotFound:                           "There is no such page.",
		CodeConsoleAgent:                       "The console is for people: an agent's session sees nothing of it. Sign in as yourself.",
		CodeConsoleRole:                        "You hold none of the console's roles (viewer, operator, approver, write-off): ask for one, or sign in as a person who holds one.",
		CodePauseRole:                          "Pausing a schedule needs the operator or approver role. Nothing was done.",
		CodeResumeRole:                         "Resuming a schedule needs the approver role (collections.approver). Nothing was done.",
		schedules.CodeNotFound:                 "There is no schedule with this id. Nothing was done.",
		schedules.CodeEnded:                    "The schedule's end date is past: it cannot be resumed; create another. Nothing was done.",
	},
	Unknown:   "The request was refused.",
	Ledger:    ledgerEnglish,
	Import:    importEnglish,
	Schedules: schedulesEnglish,
}

var portuguese = texts{
	Tag: "pt-BR", Name: "Português",
	ApprovalTitle: "Aprovar uma chamada crítica", RefusalTitle: "Não realizado",
	Intro: "Um agente pediu para executar a chamada abaixo. Ela só é executada se uma pessoa aprovar exatamente esta chamada; nada aconteceu ainda.",
	State: "Situação", Tool: "Ferramenta", RequestedBy: "Pedida por", ThroughAgent: "por meio do agente",
	Client: "Cliente OAuth", Requested: "Pedida em", Expires: "Expira em", DecidedBy: "Decidida por",
	Preview: "O que ela fará", SideEffects: "Efeitos colaterais", NoSideEffects: "Nenhum declarado.",
	Approve: "Aprovar", Reject: "Rejeitar",
	StepUpNote:  "Decidir exige um login recente e mais forte; se o seu não for, você será levado a entrar de novo:",
	RoleNote:    "Decidir exige um destes papéis:",
	LacksRole:   "Você não o tem, então não pode aprovar nem rejeitar esta chamada: peça a uma pessoa que o tenha, ou entre como ela.",
	AgentCannot: "Você entrou como agente: só uma pessoa aprova ou rejeita uma chamada.",
	Withheld:    "A prévia e os efeitos colaterais são mostrados só a quem pode decidir esta chamada e à pessoa em nome de quem ela foi pedida.",
	SignedInAs:  "Conectado como", AgentFor: "um agente:", SignOut: "Sair", SignInAgain: "Entrar",
	BackToApproval: "Voltar à aprovação",
	LedgerNow:      "As faturas no razão de recebíveis, agora",
	PixQR:          "O QR Code PIX que a mensagem leva: o copia-e-cola acima, como o cliente o lê",
	WriteOffTitle:  "Baixar uma fatura como perda",
	WriteOffIntro: "Registre que a dívida da fatura não será cobrada. Só uma pessoa com o papel de baixa faz isso, " +
		"e a baixa é permanente e auditada: uma fatura é baixada uma única vez.",
	WriteOffSubmit: "Dar baixa", InvoiceID: "Identificador da fatura", CustomerID: "Identificador do cliente",
	AmountCents: "Valor (centavos de real)", Reason: "Motivo", WrittenOff: "Fatura baixada", WriteOffID: "Baixa",
	WrittenOffBy: "Baixada por", WrittenOffAt: "Registrada em", WrittenOffAmount: "Valor baixado", AnotherWriteOff: "Baixar outra fatura",
	BackToWriteOff: "Voltar ao formulário de baixa",
	SkipToMain:     "Pular para o conteúdo", Language: "Idioma", ConsoleNav: "Console", JustNow: "menos de um minuto",
	InboxTitle: "Aprovações", ToolsTitle: "Ferramentas", HealthTitle: "Saúde",
	PendingHeading: "Aguardando decisão", PendingCaption: "Chamadas pedidas por agentes, aguardando uma pessoa, as mais antigas primeiro",
	Waiting: "Aguardando há", Summary: "O que faz", Open: "Ver", Decide: "Revisar e decidir",
	EffectsCount: "efeitos colaterais", LinesCount: "linhas de prévia", NonePending: "Nenhuma chamada aguarda decisão.",
	Pages: "Páginas", FirstPage: "Primeira página", NextPage: "Próxima página",
	DecidedHeading: "Decididas recentemente", DecidedCaption: "Chamadas decididas nos últimos 7 dias, as mais recentes primeiro", DecidedAt: "Decidida em",
	NoneDecided:  "Nenhuma chamada foi decidida nos últimos 7 dias.",
	ToolsIntro:   "O que cada ferramenta que os agentes chamam pode fazer, por nível de risco: quem a aprova e quanto ela gasta dos limites.",
	ToolsCaption: "Ferramentas", WhatItDoes: "O que pode fazer", WhoApproves: "Quem aprova ou executa", StepUpHeading: "Login recente e forte", Yes: "exigido", No: "não",
	Tiers: map[contract.Risk]string{contract.Low: "Risco baixo", contract.Medium: "Risco médio", contract.High: "Risco alto",
		contract.Critical: "Crítico", contract.Forbidden: "Proibido a agentes"},
	TierRules: map[contract.Risk]string{
		contract.Low:       "Leituras, sem efeito duradouro: um agente as executa sozinho.",
		contract.Medium:    "Mudanças internas restritas: o cliente pode pedir confirmação ao usuário.",
		contract.High:      "Mudanças relevantes: o cliente pede confirmação ao usuário a cada chamada.",
		contract.Critical:  "Efeitos externos, dinheiro: uma pessoa com o papel aprova exatamente a chamada na página de aprovação, após um login recente e forte.",
		contract.Forbidden: "Nunca visíveis a um agente: só uma pessoa com o papel as executa, no console ou na linha de comando.",
	},
	Confirmations: map[contract.Confirmation]string{contract.ConfirmNone: "ninguém: o agente a executa", contract.ConfirmAdvised: "o usuário do cliente, se o cliente pedir",
		contract.ConfirmInBand: "o usuário do cliente, na conversa", contract.ConfirmOutOfBand: "uma pessoa, na página de aprovação", contract.ConfirmHumanOnly: "uma pessoa a executa"},
	BudgetsHeading: "Limites", BudgetsIntro: "Cada chamada gasta uma unidade de cada limite que o seu nível gasta; uma chamada além de um limite é recusada até ele se recompor.",
	BudgetsCaption: "Os limites de taxa e os níveis que os gastam", Budget: "Limite", Allowance: "Quantidade", SpentBy: "Gasto por",
	BudgetPrincipal: "Requisições por pessoa e cliente", BudgetOrigin: "Requisições por endereço de rede", BudgetWrite: "Mudanças por pessoa e cliente",
	BudgetCritical: "Aprovações pedidas por pessoa e cliente", Off: "sem limite", Burst: "rajadas de até",
	HealthIntro:   "O que aguarda agora, lido do banco de dados (as métricas de operação).",
	HealthCaption: "Métricas de operação", Metric: "Métrica", Value: "Valor",
	RateLimitedNow: "Requisições recusadas por limite de taxa neste servidor, recentemente", ApprovalsPendingNow: "Aprovações aguardando decisão",
	ApprovalOldestAge: "A mais antiga aguarda há", OutboxQueuedNow: "Mensagens na fila de saída ainda não enviadas", OutboxRetryingNow: "Delas, aguardando nova tentativa",
	AuditUnsealedNow: "Eventos de auditoria ainda fora da cadeia de hashes", AuditLagNow: "O mais antigo deles aguarda há",
	Charts:     chartsPortuguese,
	AuditTitle: "Trilha de auditoria", AuditIntro: "Cada chamada de ferramenta, decisão e ação do console, das mais recentes às mais antigas. Os eventos não guardam dados de clientes: argumentos e resultados são resumos criptográficos.",
	ChainHeading: "A cadeia de hashes", ChainSealed: "Todos os eventos estão na cadeia de hashes.", ChainVerified: "A cadeia foi verificada", ChainBroken: "A cadeia está quebrada",
	VerifyChain: "Verificar a cadeia", VerifyNote: "Percorre a cadeia inteira, conferindo o hash e o MAC de cada evento: pode demorar. Auditado.",
	FiltersHeading: "Filtros", Tier: "Nível de risco", Outcome: "Resultado", Person: "Pessoa", Agent: "Agente",
	AnyOption: "qualquer", Since: "A partir de (horário de Brasília)", Until: "Antes de (horário de Brasília)", ApplyFilters: "Filtrar",
	ExportLink: "Exportar em JSON Lines", ExportNote: "Os eventos selados que estes filtros escolhem, um arquivo que cobranca audit verify --file confere offline.",
	EventsHeading: "Eventos", EventsCaption: "Eventos de auditoria, dos mais recentes aos mais antigos", When: "Quando", Event: "Evento", Who: "Quem", Seq: "Seq",
	RequestID: "requisição", Unsealed: "ainda não selado", NoEvents: "Nenhum evento corresponde a estes filtros.",
	SearchedBack: "Esta página buscou até",
	States: map[approval.State]string{approval.Pending: "aguardando decisão", approval.Approved: "aprovada (aguardando a nova tentativa do agente)",
		approval.Rejected: "rejeitada", approval.Executed: "aprovada e executada", approval.Expired: "expirada"},
	Messages: messagesPortuguese,
	Codes: map[failure.Code]string{
		approval.CodeApproverIsAgent:           "Um agente não pode aprovar nem rejeitar uma chamada: só uma pessoa pode. Entre com a sua própria identidade.",
		approval.CodeApproverIsRequester:       "Você pediu esta chamada (por meio do seu agente): outra pessoa deve decidi-la.",
		approval.CodeApproverLacksRole:         "Você não tem o papel que decidir esta chamada exige: uma pessoa que o tenha deve decidi-la.",
		failure.InsufficientUserAuthentication: "Esta decisão exige um login recente e mais forte, e o login não o ofereceu.",
		approval.CodeDecided:                   "Esta aprovação não aguarda mais uma decisão: nada foi alterado.",
		approval.CodeNotFound:                  "Não existe aprovação com este identificador.",
		signin.CodeCrossOrigin:                 "O pedido veio de outro site e por isso foi recusado. Use os links e os botões deste site.",
		signin.CodeCSRFInvalid:                 "O token de segurança do formulário está ausente ou desatualizado. Recarregue a página e tente de novo.",
		signin.CodeNotSignedIn:                 "Você não está conectado, ou a sua sessão terminou. Entre e tente de novo.",
		signin.CodeStateInvalid:                "Este login não corresponde a um iniciado neste navegador (ou já foi usado, ou demorou demais). Comece de novo pela página.",
		signin.CodeSigninFailed:                "O login não foi concluído.",
		signin.CodeInvalidRequest:              "A requisição está malformada.",
		failure.Unavailable:                    "O serviço de login não responde. Tente de novo em instantes.",
		failure.Internal:                       "Algo deu errado do nosso lado.",
		failure.PersonRequired:                 "Só uma pessoa dá baixa em uma fatura: entre com a sua própria identidade, não como agente.",
		failure.PersonLacksRole:                "Você não tem o papel que dar baixa em uma fatura exige: uma pessoa que o tenha deve fazê-lo.",
		writeoffs.CodeAlreadyWrittenOff:        "Esta fatura já foi baixada: uma fatura é baixada uma única vez. Nada foi feito.",
		customers.CodeNotFound:                 "Não existe cliente com este identificador. Nada foi feito.",
		failure.InvalidArguments:               "Um campo não é válido (veja abaixo). Nada foi feito.",
		failure.IdempotencyConflict:            "Este formulário já foi enviado com outros valores. Abra a página de novo para um formulário novo.",
		failure.RequestInProgress:              "Este formulário ainda está sendo processado. Aguarde um momento e envie de novo.",
		failure.RateLimited:                    "Requisições demais. Aguarde um momento e tente de novo.",
		codeNotFound:                           "Esta página não existe.",
		CodeConsoleAgent:                       "O console é para pessoas: a sessão de um agente não vê nada dele. Entre com a sua própria identidade.",
		CodeConsoleRole:                        "Você não tem nenhum dos papéis do console (leitura, operação, aprovação, baixa): peça um, ou entre como uma pessoa que tenha um.",
		CodePauseRole:                          "Pausar uma régua exige o papel de operação ou de aprovação. Nada foi feito.",
		CodeResumeRole:                         "Retomar uma régua exige o papel de aprovação (collections.approver). Nada foi feito.",
		schedules.CodeNotFound:                 "Não existe régua com este identificador. Nada foi feito.",
		schedules.CodeEnded:                    "A data final da régua já passou: ela não pode ser retomada; crie outra. Nada foi feito.",
	},
	Unknown:   "A requisição foi recusada.",
	Ledger:    ledgerPortuguese,
	Import:    importPortuguese,
	Schedules: schedulesPortuguese,
}

// chartTexts are the health page's charts' words.
type chartTexts struct {
	Heading, AsOf, Scrolls, Hour, Total, NoCalls              string
	Calls, CallsOfTier, CallsDesc, CallsTiers                 string
	Outcomes                                                  [7]string // outcomeGroups'
	LedgerHeading, OpenByAging, OpenByAgingDesc, Bucket       string
	OpenAmount, Invoices                                      string
	Buckets                                                   [len(value.AgingBucketNames)]string
	CashPerWeek, CashPerWeekDesc, WeekOf, Collected, Payments string
	NoCash                                                    string
}

var chartsEnglish = chartTexts{
	Heading: "Tool calls", AsOf: "as of", Scrolls: "The chart scrolls sideways on a narrow screen; the table below it holds the same numbers.",
	Hour: "Hour", Total: "Total", NoCalls: "No tool call in the last 7 days.",
	Calls: "Tool calls per hour, last 7 days", CallsOfTier: ": tool calls per hour, last 7 days, by outcome",
	CallsTiers:    "A chart per risk tier with calls, each hour's bar split by outcome; all on the same scale, with the same colors.",
	CallsDesc:     "A bar per hour in Brasília time, the current hour last; the table below lists each hour with calls.",
	Outcomes:      [7]string{"Allowed", "Awaiting approval", "Rejected arguments", "Denied", "Rate limited", "Failed", "Other"},
	LedgerHeading: "Receivables", OpenByAging: "Open amount by aging", Bucket: "Aging",
	OpenByAgingDesc: "The open amount of the unsettled invoices, by days past due.",
	OpenAmount:      "Open amount", Invoices: "Invoices",
	Buckets:     [len(value.AgingBucketNames)]string{"Not due", "1–30 days", "31–60 days", "61–90 days", "Over 90 days"},
	CashPerWeek: "Cash collected per week, last 12 weeks", CashPerWeekDesc: "What was allocated to invoices, by the week the payment was made (Monday to Sunday).",
	WeekOf: "Week of", Collected: "Collected", Payments: "Payments", NoCash: "No cash collected in the last 12 weeks.",
}

var chartsPortuguese = chartTexts{
	Heading: "Chamadas de ferramentas", AsOf: "posição de", Scrolls: "O gráfico rola para o lado numa tela estreita; a tabela abaixo dele tem os mesmos números.",
	Hour: "Hora", Total: "Total", NoCalls: "Nenhuma chamada de ferramenta nos últimos 7 dias.",
	Calls: "Chamadas de ferramentas por hora, últimos 7 dias", CallsOfTier: ": chamadas de ferramentas por hora, últimos 7 dias, por resultado",
	CallsTiers:    "Um gráfico por nível de risco com chamadas, a barra de cada hora dividida por resultado; todos na mesma escala, com as mesmas cores.",
	CallsDesc:     "Uma barra por hora, no horário de Brasília, a hora atual por último; a tabela abaixo lista cada hora com chamadas.",
	Outcomes:      [7]string{"Permitidas", "Aguardando aprovação", "Argumentos recusados", "Negadas", "Limite de taxa", "Falharam", "Outras"},
	LedgerHeading: "Contas a receber", OpenByAging: "Valor em aberto por vencimento", Bucket: "Vencimento",
	OpenByAgingDesc: "O valor em aberto das faturas não quitadas, por dias de atraso.",
	OpenAmount:      "Valor em aberto", Invoices: "Faturas",
	Buckets:     [len(value.AgingBucketNames)]string{"A vencer", "1–30 dias", "31–60 dias", "61–90 dias", "Mais de 90 dias"},
	CashPerWeek: "Recebido por semana, últimas 12 semanas", CashPerWeekDesc: "O que foi alocado a faturas, pela semana em que o pagamento foi feito (segunda a domingo).",
	WeekOf: "Semana de", Collected: "Recebido", Payments: "Pagamentos", NoCash: "Nada recebido nas últimas 12 semanas.",
}
