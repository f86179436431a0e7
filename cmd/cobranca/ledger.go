package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cobranca/cobranca/internal/bankfile"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/store"
)

// paymentMatchedEvent is the audit event of `payments match` (adminEvent), as
// collections.match_payment's: counts only. The imports' are the ledger's
// (ledger.EventInvoicesImported, ledger.EventPaymentsImported), which the
// console's import page writes too.
const paymentMatchedEvent = "ledger.payment.matched"

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
	data, err := readInput(paths[0], e.stdin, ledger.MaxImportBytes)
	if err != nil {
		return err
	}
	file, bad := ledger.ReadInvoiceFile(data)
	if bad != nil && !isFileRefusal(bad) {
		return bad
	}
	return withAdmin(ctx, e, func(a admin) error {
		if bad != nil { // someone tried, and nothing changed: audited rejected
			return a.refused(ctx, ledger.EventInvoicesImported, "", badRows(bad), refusal(bad))
		}
		var n ledger.InvoiceImport
		err := a.change(ctx, ledger.EventInvoicesImported, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			if n, err = file.Import(ctx, tx, a.now); err != nil {
				return "", nil, err
			}
			return "", n.Details(), nil
		})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(e.stdout, map[string]int{"rows": n.Rows, "created": n.Created, "updated": n.Updated, "unchanged": n.Unchanged})
		}
		_, err = fmt.Fprintf(e.stdout, "imported %d invoice(s): %d created, %d updated, %d unchanged\n", n.Rows, n.Created, n.Updated, n.Unchanged)
		return err
	})
}

// isFileRefusal reports whether err is an import file refused for its
// problems (not a failure to read it).
func isFileRefusal(err error) bool {
	_, ok := errors.AsType[*ledger.FileError](err)
	return ok
}

// badRows are the details of an import file's refusal: how many problems.
func badRows(err error) map[string]int64 {
	fe, _ := errors.AsType[*ledger.FileError](err)
	return map[string]int64{"badRows": int64(len(fe.Problems))}
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
	// The console's import takes at most ledger.MaxImportBytes too: one bound for one file.
	data, err := readInput(paths[0], e.stdin, ledger.MaxImportBytes)
	if err != nil {
		return err
	}
	file, err := bankfile.Read(bytes.NewReader(data), bankfile.Options{CSVSource: *source})
	bad, isBad := errors.AsType[*bankfile.Error](err)
	if err != nil && !isBad {
		return err
	}
	if file != nil && *source != "" && file.Format != bankfile.CSV {
		return fs.misuse("--source names the system of a CSV of payments; this file is a %s", file.Format.Name())
	}
	return withAdmin(ctx, e, func(a admin) error {
		if isBad {
			fe := bad.Refusal()
			return a.refused(ctx, ledger.EventPaymentsImported, "", badRows(fe), refusal(fe))
		}
		var n bankfile.Import
		err := a.change(ctx, ledger.EventPaymentsImported, func(ctx context.Context, tx store.Tx) (string, map[string]int64, error) {
			var err error
			if n, err = file.Import(ctx, tx, ledger.Actor{Subject: a.operator}, a.now); err != nil {
				return "", nil, err
			}
			return "", n.Details(), nil
		})
		if err != nil {
			return refusal(err)
		}
		if *asJSON {
			return printJSON(e.stdout, struct {
				Format bankfile.Format  `json:"format"`
				Counts map[string]int64 `json:"counts"`
			}{file.Format, n.Details()})
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
