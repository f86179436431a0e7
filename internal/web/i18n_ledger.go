package web

import (
	"time"

	"github.com/cobranca/cobranca/internal/bankfile"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
)

// CodeOperatorRequired: a person without the operator's role sent the match or import form.
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
	Source, PaymentTitle, OthersLink                                         string
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
	Source: "Source", PaymentTitle: "Unmatched payment", OthersLink: "%s more candidates",
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
	Source: "Origem", PaymentTitle: "Pagamento não conciliado", OthersLink: "Mais %s títulos candidatos",
	States: map[ledger.State]string{ledger.StateOpen: "em aberto", ledger.StatePartiallyPaid: "pago em parte", ledger.StatePaid: "pago",
		ledger.StateVoid: "cancelado", ledger.StateWrittenOff: "baixado"},
	Fits: map[ledger.Rule]string{ledger.RuleReference: "traz a referência", ledger.RuleAmount: "mesmo valor, vencimento próximo",
		ledger.RuleNone: "mesmo cliente", ledger.RuleManual: "conciliado por uma pessoa"},
}

// importTexts are the import page's words in one language.
type importTexts struct {
	Title, Intro, NotAllowed, FormHeading, KindLegend, KindInvoices, KindPayments string
	File, MaxSize, Submit, ResultHeading, InvoicesCaption, Rows, Created          string
	Updated, Unchanged, PaymentsCaption, Format, Read, Skipped, New, Duplicate    string
	MatchedReference, MatchedAmount, Allocated, Unmatched, Credit, Resolve        string
	NothingImported, ProblemsCaption, Where, Field, Problem, Line, Transaction    string
	WholeFile, Count, Of                                                          string
	Formats                                                                       map[bankfile.Format]string
}

var importEnglish = importTexts{
	Title: "Import files",
	Intro: "Import a file of invoices into the receivables ledger, or a bank file of payments, which are matched to the invoices as they are recorded. " +
		"A file is imported whole or not at all, and each import is recorded in the audit trail with its counts. Importing the same file again changes nothing.",
	NotAllowed: "Importing files needs the operator role.", FormHeading: "Import a file", KindLegend: "What the file holds",
	KindInvoices: "Invoices: a CSV with a header, or JSON Lines", KindPayments: "Payments: a CNAB 240 return file, an OFX statement, or a CSV of payments",
	File: "File", MaxSize: "At most (MiB)", Submit: "Import", ResultHeading: "Imported",
	InvoicesCaption: "The invoices of the file", Rows: "Invoices in the file", Created: "Created", Updated: "Updated", Unchanged: "Unchanged",
	PaymentsCaption: "The payments of the file", Format: "File read as", Read: "Payments read", Skipped: "Other records skipped", New: "New",
	Duplicate: "Already imported", MatchedReference: "Matched by reference", MatchedAmount: "Matched by amount", Allocated: "Allocated",
	Unmatched: "Unmatched", Credit: "Left as credit", Resolve: "Match the unmatched payments",
	NothingImported: "Nothing was imported: the file was refused whole.", ProblemsCaption: "The problems found in the file",
	Where: "Where", Field: "Field", Problem: "Problem", Line: "line", Transaction: "transaction", WholeFile: "the whole file",
	Count: "Problems", Of: "Read as",
	Formats: map[bankfile.Format]string{bankfile.CNAB240: "CNAB 240 return file", bankfile.OFX: "OFX statement", bankfile.CSV: "CSV of payments"},
}

var importPortuguese = importTexts{
	Title: "Importar arquivos",
	Intro: "Importe um arquivo de títulos para a carteira de recebíveis, ou um arquivo do banco com pagamentos, conciliados com os títulos ao serem registrados. " +
		"Um arquivo é importado inteiro ou não é importado, e cada importação fica registrada na trilha de auditoria com as contagens. Importar o mesmo arquivo de novo não muda nada.",
	NotAllowed: "Importar arquivos exige o papel de operação.", FormHeading: "Importar um arquivo", KindLegend: "O que o arquivo contém",
	KindInvoices: "Títulos: um CSV com cabeçalho, ou JSON Lines", KindPayments: "Pagamentos: um arquivo de retorno CNAB 240, um extrato OFX ou um CSV de pagamentos",
	File: "Arquivo", MaxSize: "No máximo (MiB)", Submit: "Importar", ResultHeading: "Importado",
	InvoicesCaption: "Os títulos do arquivo", Rows: "Títulos no arquivo", Created: "Criados", Updated: "Atualizados", Unchanged: "Sem mudança",
	PaymentsCaption: "Os pagamentos do arquivo", Format: "Arquivo lido como", Read: "Pagamentos lidos", Skipped: "Outros registros ignorados", New: "Novos",
	Duplicate: "Já importados", MatchedReference: "Conciliados pela referência", MatchedAmount: "Conciliados pelo valor", Allocated: "Alocado",
	Unmatched: "Não conciliados", Credit: "Deixado como crédito", Resolve: "Conciliar os pagamentos não conciliados",
	NothingImported: "Nada foi importado: o arquivo foi recusado inteiro.", ProblemsCaption: "Os problemas encontrados no arquivo",
	Where: "Onde", Field: "Campo", Problem: "Problema", Line: "linha", Transaction: "transação", WholeFile: "o arquivo todo",
	Count: "Problemas", Of: "Lido como",
	Formats: map[bankfile.Format]string{bankfile.CNAB240: "arquivo de retorno CNAB 240", bankfile.OFX: "extrato OFX", bankfile.CSV: "CSV de pagamentos"},
}

// The ledger pages' refusals, beside the others' (i18n.go).
func init() {
	english.Codes[CodeOperatorRequired] = "Matching payments and importing files need the operator role (collections.operator). Nothing was done."
	portuguese.Codes[CodeOperatorRequired] = "Conciliar pagamentos e importar arquivos exigem o papel de operação (collections.operator). Nada foi feito."
	english.Codes[CodeFileTooLarge] = "The file is larger than an import file may be. Nothing was imported."
	portuguese.Codes[CodeFileTooLarge] = "O arquivo é maior do que um arquivo de importação pode ser. Nada foi importado."
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
