package web

import (
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
)

// CodeOperatorRequired: a person without the operator's role sent the match form.
const CodeOperatorRequired failure.Code = "console_operator_required"

// ledgerTexts are the ledger and payments pages' words in one language.
type ledgerTexts struct {
	Title, Intro, InvoiceTitle, PaymentsTitle, PaymentsIntro                 string
	FilterHeading, Customer, StateLegend, OverdueDays, Disputed, Any         string
	DisputedYes, DisputedNo, PromiseOnly, Apply, Clear                       string
	Caption, Invoice, Due, Amount, OpenAmount, Flags, OverdueFlag, NoneFound string
	DisputedFlag, PromiseFlag                                                string
	Details, Issued, Paid, WrittenOff, PaymentRefs, Reference                string
	AllocationsHeading, AllocationsCaption, NoAllocations, Payment, Rule     string
	By, At, PromiseHeading, NoPromise, PromisedFor, Channel, Note            string
	DisputeHeading, NoDispute, OpenedBy, ContactsHeading, ContactsCaption    string
	NoContacts, Draft, Subject, SubjectWithheld, Recipient, Queued, Outcome  string
	Delivered, Undeliverable, Waiting                                        string
	PaymentsCaption, PaidOn, Method, Payer, Left, Candidates, NoCandidates   string
	NoPayments, Fit, Match, MatchNote, MoreCandidates, BackToPayments        string
	Source                                                                   string
	States                                                                   map[ledger.State]string
	Fits                                                                     map[ledger.Rule]string
}

var ledgerEnglish = ledgerTexts{
	Title: "Ledger", Intro: "The invoices of the receivables ledger, by due date.", InvoiceTitle: "Invoice",
	PaymentsTitle: "Unmatched payments",
	PaymentsIntro: "Payments with an amount not yet allocated to an invoice, oldest first, each with the invoices it may pay. " +
		"Matching allocates the amount shown, at once, and is recorded in the audit trail.",
	FilterHeading: "Filter", Customer: "Customer id", StateLegend: "State", OverdueDays: "At least this many days overdue",
	Disputed: "Dispute", Any: "any", DisputedYes: "disputed", DisputedNo: "not disputed", PromiseOnly: "Only under a promise to pay",
	Apply: "Apply", Clear: "Clear the filter",
	Caption: "Invoices, by due date", Invoice: "Invoice", Due: "Due", Amount: "Amount", OpenAmount: "Open", Flags: "Notes",
	OverdueFlag: "overdue", NoneFound: "No invoice matches the filter.", DisputedFlag: "disputed", PromiseFlag: "promise to pay",
	Details: "The invoice", Issued: "Issued", Paid: "Paid", WrittenOff: "Written off", PaymentRefs: "Payment references", Reference: "Reference",
	AllocationsHeading: "Payments allocated", AllocationsCaption: "The payments allocated to this invoice, oldest first",
	NoAllocations: "No payment is allocated to this invoice.", Payment: "Payment", Rule: "How", By: "By", At: "At",
	PromiseHeading: "Promise to pay", NoPromise: "No promise to pay was recorded.", PromisedFor: "Promised for", Channel: "Channel", Note: "Note",
	DisputeHeading: "Dispute", NoDispute: "No open dispute.", OpenedBy: "Opened by",
	ContactsHeading: "Contacts", ContactsCaption: "Reminders naming this invoice, the latest first",
	NoContacts: "No reminder named this invoice.", Draft: "Reminder", Subject: "Subject",
	SubjectWithheld: "(shown to the operator, approver and write-off roles)", Recipient: "To", Queued: "Queued", Outcome: "Delivery",
	Delivered: "delivered", Undeliverable: "undeliverable", Waiting: "waiting",
	PaymentsCaption: "Payments with an amount left, oldest first", PaidOn: "Paid on", Method: "Method", Payer: "Payer", Left: "Left",
	Candidates: "Invoices it may pay", NoCandidates: "No open invoice of its customer or reference.",
	NoPayments: "Every payment is matched.", Fit: "Fit", Match: "Match", MatchNote: "Matching needs the operator role.",
	MoreCandidates: "The customer has more open invoices than shown here.", BackToPayments: "Back to the unmatched payments",
	Source: "Source",
	States: map[ledger.State]string{ledger.StateOpen: "open", ledger.StatePartiallyPaid: "partially paid", ledger.StatePaid: "paid",
		ledger.StateVoid: "void", ledger.StateWrittenOff: "written off"},
	Fits: map[ledger.Rule]string{ledger.RuleReference: "carries its reference", ledger.RuleAmount: "same amount, due near its date",
		ledger.RuleNone: "same customer", ledger.RuleManual: "matched by a person"},
}

var ledgerPortuguese = ledgerTexts{
	Title: "Carteira", Intro: "Os títulos da carteira de recebíveis, por vencimento.", InvoiceTitle: "Título",
	PaymentsTitle: "Pagamentos não conciliados",
	PaymentsIntro: "Pagamentos com valor ainda não alocado a um título, os mais antigos primeiro, cada um com os títulos que pode pagar. " +
		"Conciliar aloca o valor mostrado, na hora, e fica registrado na trilha de auditoria.",
	FilterHeading: "Filtro", Customer: "Id do cliente", StateLegend: "Situação", OverdueDays: "Vencidos há pelo menos (dias)",
	Disputed: "Contestação", Any: "qualquer", DisputedYes: "contestados", DisputedNo: "não contestados", PromiseOnly: "Só com promessa de pagamento",
	Apply: "Aplicar", Clear: "Limpar o filtro",
	Caption: "Títulos, por vencimento", Invoice: "Título", Due: "Vencimento", Amount: "Valor", OpenAmount: "Em aberto", Flags: "Observações",
	OverdueFlag: "vencido", NoneFound: "Nenhum título atende ao filtro.", DisputedFlag: "contestado", PromiseFlag: "promessa de pagamento",
	Details: "O título", Issued: "Emissão", Paid: "Pago", WrittenOff: "Baixado", PaymentRefs: "Referências de pagamento", Reference: "Referência",
	AllocationsHeading: "Pagamentos alocados", AllocationsCaption: "Os pagamentos alocados a este título, os mais antigos primeiro",
	NoAllocations: "Nenhum pagamento foi alocado a este título.", Payment: "Pagamento", Rule: "Como", By: "Por", At: "Em",
	PromiseHeading: "Promessa de pagamento", NoPromise: "Nenhuma promessa de pagamento registrada.", PromisedFor: "Prometido para",
	Channel: "Canal", Note: "Nota",
	DisputeHeading: "Contestação", NoDispute: "Nenhuma contestação aberta.", OpenedBy: "Aberta por",
	ContactsHeading: "Contatos", ContactsCaption: "Lembretes que citam este título, os mais recentes primeiro",
	NoContacts: "Nenhum lembrete citou este título.", Draft: "Lembrete", Subject: "Assunto",
	SubjectWithheld: "(visível aos papéis de operação, aprovação e baixa)", Recipient: "Para", Queued: "Na fila em", Outcome: "Entrega",
	Delivered: "entregue", Undeliverable: "não entregue", Waiting: "aguardando",
	PaymentsCaption: "Pagamentos com saldo, os mais antigos primeiro", PaidOn: "Pago em", Method: "Forma", Payer: "Pagador", Left: "Saldo",
	Candidates: "Títulos que pode pagar", NoCandidates: "Nenhum título em aberto do cliente ou da referência.",
	NoPayments: "Todos os pagamentos estão conciliados.", Fit: "Critério", Match: "Conciliar", MatchNote: "Conciliar exige o papel de operação.",
	MoreCandidates: "O cliente tem mais títulos em aberto do que os mostrados aqui.", BackToPayments: "Voltar aos pagamentos não conciliados",
	Source: "Origem",
	States: map[ledger.State]string{ledger.StateOpen: "em aberto", ledger.StatePartiallyPaid: "pago em parte", ledger.StatePaid: "pago",
		ledger.StateVoid: "cancelado", ledger.StateWrittenOff: "baixado"},
	Fits: map[ledger.Rule]string{ledger.RuleReference: "traz a referência", ledger.RuleAmount: "mesmo valor, vencimento próximo",
		ledger.RuleNone: "mesmo cliente", ledger.RuleManual: "conciliado por uma pessoa"},
}

// The ledger pages' refusals, beside the others' (i18n.go).
func init() {
	english.Codes[CodeOperatorRequired] = "Matching a payment needs the operator role (collections.operator). Nothing was done."
	portuguese.Codes[CodeOperatorRequired] = "Conciliar um pagamento exige o papel de operação (collections.operator). Nada foi feito."
	for code, words := range map[failure.Code][2]string{
		ledger.CodePaymentNotFound: {"There is no payment with this id. Nothing was done.", "Não há pagamento com este id. Nada foi feito."},
		ledger.CodeInvoiceNotFound: {"There is no invoice with this id. Nothing was done.", "Não há título com este id. Nada foi feito."},
	} {
		english.Codes[code], portuguese.Codes[code] = words[0], words[1]
	}
}

// DueDay is a ledger date (YYYY-MM-DD) as the reader writes it: 02/12/2026 in Portuguese,
// 2026-12-02 in English; another text as it is.
func (t *texts) DueDay(s string) string {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Tag != portuguese.Tag {
		return s
	}
	return d.Format("02/01/2006")
}
