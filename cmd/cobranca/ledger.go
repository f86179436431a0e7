package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/cobranca/cobranca/internal/bankfile"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
)

// The audit events of the ledger's commands (adminEvent): counts only,
// never an invoice's or a payment's content.
const (
	invoicesImportedEvent = "ledger.invoices.imported"
	paymentsImportedEvent = "ledger.payments.imported"
	paymentMatchedEvent   = "ledger.payment.matched" // as collections.match_payment's
)

// maxInvoiceRows bounds the invoices of one file of `invoices import`.
const maxInvoiceRows = 100_000

// maxImportFile bounds the bytes of one import file: 100 000 invoices with
// every column filled are about 30 MB.
const maxImportFile = 64 << 20

// invoicesImport creates or updates the ledger's invoices of a CSV (with a
// header) or JSON Lines file, all of them in one transaction or, when any
// row is bad, none; one audit event with the counts.
func invoicesImport(ctx context.Context, e env, fs *flagSet, args []string) error {
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	paths, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(paths) != 1 {
		return fs.misuse("want one FILE, or - to read stdin")
	}
	data, err := readInput(paths[0], e.stdin, maxImportFile)
	if err != nil {
		return err
	}
	recs, err := readInvoices(data)
	var bad ledger.RowErrors
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	return withAdmin(ctx, e, func(a admin) error {
		if bad != nil { // someone tried, and nothing changed: audited rejected
			return a.refused(ctx, invoicesImportedEvent, "", map[string]int64{"badRows": int64(len(bad))},
				&failure.Error{Code: failure.InvalidArguments, Message: nothingImported(invoiceProblems(bad))})
		}
		var n ledger.UpsertCounts
		err := a.change(ctx, invoicesImportedEvent, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			if n, err = ledger.UpsertInvoices(ctx, tx, recs, a.now); err != nil {
				var ie *ledger.IndexError
				if errors.As(err, &ie) {
					return "", nil, atRecord(ie, "line "+strconv.Itoa(invoiceLine(data, ie.Index)))
				}
				return "", nil, err
			}
			return "", map[string]int64{"rows": int64(len(recs)), "created": int64(n.Created), "updated": int64(n.Updated), "unchanged": int64(n.Unchanged)}, nil
		})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(e.stdout, map[string]int{"rows": len(recs), "created": n.Created, "updated": n.Updated, "unchanged": n.Unchanged})
		}
		_, err = fmt.Fprintf(e.stdout, "imported %d invoice(s): %d created, %d updated, %d unchanged\n", len(recs), n.Created, n.Updated, n.Unchanged)
		return err
	})
}

// readInvoices reads a file of invoices: JSON Lines when its first
// character is an object's brace, else CSV with a header.
func readInvoices(data []byte) ([]ledger.InvoiceRecord, error) {
	if isJSONLines(data) {
		return ledger.ReadInvoicesJSONL(bytes.NewReader(data), maxInvoiceRows)
	}
	return ledger.ReadInvoicesCSV(bytes.NewReader(data), maxInvoiceRows)
}

func isJSONLines(data []byte) bool {
	data = bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	return len(data) > 0 && data[0] == '{'
}

// invoiceLine is the line of the i-th invoice of a file readInvoices took:
// in JSON Lines its line; in CSV the line its row starts on (a quoted cell
// may hold line breaks).
func invoiceLine(data []byte, i int) int {
	if isJSONLines(data) {
		return i + 1
	}
	t, _ := ledger.OpenCSV(bytes.NewReader(data), ledger.InvoiceColumns, nil)
	if t == nil { // cannot be: the file was read whole before
		return 0
	}
	for n := 0; ; n++ {
		row, line, _, stop := t.Next()
		if row == nil && stop {
			return 0
		}
		if n == i {
			return line
		}
	}
}

// atRecord is the refusal of a record of an import, where the file has it.
func atRecord(ie *ledger.IndexError, where string) *failure.Error {
	msg := where + ": "
	if ie.Err.Field != "" {
		msg += ie.Err.Field + ": "
	}
	return &failure.Error{Code: ie.Err.Code, Message: nothingImported(msg + ie.Err.Message)}
}

// nothingImported is the message of a refused import file: every file is
// all or nothing.
func nothingImported(problems string) string { return "nothing imported: " + problems }

// invoiceProblems lists a file of invoices' problems as bankfile.Error
// lists a bank file's.
func invoiceProblems(es ledger.RowErrors) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d problem(s) in the file of invoices", len(es))
	for _, e := range es {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// paymentsImport records the payments of a bank file (CNAB 240, OFX, a CSV)
// and matches them to the ledger's invoices, in one transaction; one audit
// event with the counts. A payment the ledger already has is a duplicate
// and changes nothing: importing a file again is harmless.
func paymentsImport(ctx context.Context, e env, fs *flagSet, args []string) error {
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	source := fs.String("source", "", "for a CSV of payments: the system it comes from (`NAME`), when the ids of two systems may collide; the payments' source is then csv:NAME")
	paths, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(paths) != 1 {
		return fs.misuse("want one FILE, or - to read stdin")
	}
	if fs.isSet("source") && *source == "" {
		return fs.misuse("--source: want a name (leave the flag out for none)")
	}
	var r io.Reader = e.stdin
	if name := paths[0]; name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
	}
	file, err := bankfile.Read(r, bankfile.Options{CSVSource: *source})
	var bad *bankfile.Error
	if err != nil && !errors.As(err, &bad) {
		return err
	}
	if file != nil && *source != "" && file.Format != bankfile.CSV {
		return fs.misuse("--source names the system of a CSV of payments; this file is a %s", file.Format.Name())
	}
	return withAdmin(ctx, e, func(a admin) error {
		if bad != nil {
			return a.refused(ctx, paymentsImportedEvent, "", map[string]int64{"badRows": int64(len(bad.Problems))},
				&failure.Error{Code: failure.InvalidArguments, Message: nothingImported(bad.Error())})
		}
		var n ledger.ImportCounts
		err := a.change(ctx, paymentsImportedEvent, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			if n, err = ledger.ImportPayments(ctx, tx, file.Payments, ledger.Actor{Subject: a.operator}, a.now); err != nil {
				var ie *ledger.IndexError
				if errors.As(err, &ie) && ie.Index >= 0 && ie.Index < len(file.Places) {
					return "", nil, atRecord(ie, file.Places[ie.Index].String())
				}
				return "", nil, err
			}
			return "", importDetails(n, file.Skipped), nil
		})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			out := importDetails(n, file.Skipped)
			return printJSON(e.stdout, struct {
				Format bankfile.Format  `json:"format"`
				Counts map[string]int64 `json:"counts"`
			}{file.Format, out})
		}
		_, err = fmt.Fprintf(e.stdout, "read %d payment(s) from the %s (%d other record(s) skipped): %d new, %d already imported\n"+
			"matched %d by reference and %d by amount, allocating %d (minor units); %d unmatched; %d left as credit\n",
			n.Read, file.Format.Name(), file.Skipped, n.New, n.Duplicate, n.MatchedReference, n.MatchedAmount, n.AllocatedCents, n.Unmatched, n.CreditCents)
		if err == nil && n.Unmatched > 0 {
			_, err = fmt.Fprintln(e.stdout, "resolve the unmatched with `cobranca payments match PAYMENT INVOICE…` (collections.list_unmatched_payments lists them)")
		}
		return err
	})
}

// importDetails are the counts of a payments import, for its audit event
// and --json.
func importDetails(n ledger.ImportCounts, skipped int) map[string]int64 {
	return map[string]int64{"read": int64(n.Read), "new": int64(n.New), "duplicate": int64(n.Duplicate),
		"matchedReference": int64(n.MatchedReference), "matchedAmount": int64(n.MatchedAmount), "unmatched": int64(n.Unmatched),
		"allocatedCents": n.AllocatedCents, "creditCents": n.CreditCents, "skipped": int64(skipped)}
}

// paymentsMatch allocates a payment to invoices the operator names, as
// `cobranca payments match PAYMENT INVOICE[=CENTS]…`: an invoice without
// an amount takes its open amount while the payment lasts, in the order
// given; all or nothing; audited.
func paymentsMatch(ctx context.Context, e env, fs *flagSet, args []string) error {
	asJSON := fs.Bool("json", false, "print the allocations as JSON")
	words, err := fs.positional(args)
	if err != nil {
		return err
	}
	if len(words) < 2 {
		return fs.misuse("want a PAYMENT and at least one INVOICE (or INVOICE=CENTS)")
	}
	paymentID := words[0]
	type wanted struct {
		invoiceID string
		cents     int64 // 0: the invoice's open amount while the payment lasts
	}
	var want []wanted
	seen := map[string]bool{}
	for _, w := range words[1:] {
		id, amount, given := strings.Cut(w, "=")
		var cents int64
		if given {
			n, ok := ledger.Cents(amount)
			if !ok || n == 0 {
				return fs.misuse("%s: the amount after = must be a positive whole number of minor units (cents)", id)
			}
			cents = n
		}
		if id == "" {
			return fs.misuse("want an invoice id before =")
		}
		if seen[id] {
			return fs.misuse("invoice %s is named twice", id)
		}
		seen[id] = true
		want = append(want, wanted{id, cents})
	}
	return withAdmin(ctx, e, func(a admin) error {
		var (
			allocs []ledger.Allocation
			left   int64
		)
		err := a.change(ctx, paymentMatchedEvent, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			pay, err := ledger.GetPayment(ctx, tx, paymentID)
			if errors.Is(err, ledger.ErrPaymentNotFound) {
				return "", nil, &failure.Error{Code: ledger.CodePaymentNotFound, Message: "the ledger has no payment " + paymentID}
			}
			if err != nil {
				return "", nil, err
			}
			ids := make([]string, len(want))
			for i, w := range want {
				ids[i] = w.invoiceID
			}
			invs, err := ledger.GetInvoices(ctx, tx, ids)
			if err != nil {
				return "", nil, err
			}
			plan := make([]ledger.Planned, len(want))
			left = pay.LeftCents
			for i, w := range want {
				amount := w.cents
				if amount == 0 {
					inv := invs[w.invoiceID] // unknown: Allocate says so
					amount = min(inv.OpenCents, left)
					if amount <= 0 {
						// Nothing to take: an amount Allocate refuses for the
						// real reason (settled, or the payment used up).
						amount = max(inv.OpenCents, 1)
					}
				}
				plan[i] = ledger.Planned{InvoiceID: w.invoiceID, AmountCents: amount}
				left -= min(amount, left)
			}
			if allocs, err = ledger.Allocate(ctx, tx, paymentID, plan, ledger.Actor{Subject: a.operator}, a.now); err != nil {
				return "", nil, err
			}
			var total int64
			for _, al := range allocs {
				total += al.AmountCents
			}
			left = pay.LeftCents - total
			return "payment:" + paymentID, map[string]int64{"invoices": int64(len(allocs)), "allocatedCents": total, "leftCents": left}, nil
		})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			type allocation struct {
				InvoiceID   string `json:"invoiceId"`
				AmountCents int64  `json:"amountCents"`
			}
			out := struct {
				PaymentID   string       `json:"paymentId"`
				Allocations []allocation `json:"allocations"`
				LeftCents   int64        `json:"leftCents"`
			}{PaymentID: paymentID, LeftCents: left}
			for _, al := range allocs {
				out.Allocations = append(out.Allocations, allocation{al.InvoiceID, al.AmountCents})
			}
			return printJSON(e.stdout, out)
		}
		var b strings.Builder
		fmt.Fprintf(&b, "allocated payment %s:", paymentID)
		for _, al := range allocs {
			fmt.Fprintf(&b, " %s %d", al.InvoiceID, al.AmountCents)
		}
		fmt.Fprintf(&b, "; %d left as credit\n", left)
		_, err = io.WriteString(e.stdout, b.String())
		return err
	})
}

// refusal is what the operator reads of a refusal: its code, field and
// message, without the cause the message already says.
func refusal(err error) error {
	if fe, ok := failure.As(err); ok {
		return &failure.Error{Code: fe.Code, Field: fe.Field, Message: fe.Message}
	}
	return err
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
