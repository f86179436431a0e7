package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/value"
)

// maxPortfolioFile bounds what `cobranca analyze` reads; a valid portfolio of
// the largest size is far below it.
const maxPortfolioFile = 8 << 20

func analyze(_ context.Context, e env, fs *flagSet, args []string) error {
	asJSON := fs.Bool("json", false, "print exactly the tool's structured result as JSON")
	var pacing time.Duration
	fs.Func("pacing", "least `TIME` between two contacts of one customer (72h, 3d; 0: none), as the server's "+config.VarContactPacing+", which is the default", func(v string) error {
		d, err := config.ParsePacing(v)
		pacing = d
		return err
	})
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(e.stderr, "cobranca analyze: want one FILE, or - to read stdin")
		fs.help(e.stderr)
		return exitUsage
	}
	if !fs.isSet("pacing") {
		d, err := envPacing(e.environ)
		if err != nil {
			return err
		}
		pacing = d
	}
	data, err := readInput(fs.Arg(0), e.stdin, maxPortfolioFile)
	if err != nil {
		return err
	}
	in, err := portfolio.Parse(data)
	if err != nil {
		return fmt.Errorf("invalid portfolio: %w", err)
	}
	a := portfolio.AnalyzeWith(in, portfolio.Options{ContactPacing: pacing})
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(a)
	}
	return printAnalysis(e.stdout, in, &a)
}

// envPacing is COBRANCA_CONTACT_PACING of environ, read alone: the offline
// command needs no other setting, so another variable's mistake does not
// stop it.
func envPacing(environ []string) (time.Duration, error) {
	var v string
	for _, kv := range environ {
		if val, ok := strings.CutPrefix(kv, config.VarContactPacing+"="); ok {
			v = val
		}
	}
	if v == "" {
		return 0, nil
	}
	d, err := config.ParsePacing(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", config.VarContactPacing, err)
	}
	return d, nil
}

// printAnalysis writes a as a table of the accounts, then the summary:
// totals, accounts by priority, aging, what was left out and the rates
// used, then the warnings. Amounts are in the base currency.
func printAnalysis(out io.Writer, in *portfolio.Input, a *portfolio.Analysis) error {
	var w bytes.Buffer // a tabwriter on it cannot fail: the one error is out's
	base := a.Summary.BaseCurrency
	paced := false
	for _, acc := range a.Accounts {
		paced = paced || acc.AccountDetails != nil && acc.NextContactAfter != ""
	}
	tw := tabwriter.NewWriter(&w, 0, 4, 2, ' ', 0)
	head := "PRIORITY\tCUSTOMER\tAMOUNT\tDAYS OVERDUE\tAGING\tINVOICES\tACTION\t"
	if paced {
		head += "NEXT CONTACT\t"
	}
	fmt.Fprintln(tw, head)
	for _, acc := range a.Accounts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\t", acc.Priority, acc.CustomerName+" ("+acc.CustomerID+")",
			money(base, acc.AmountCents), acc.DaysOverdue, acc.AgingBucket, acc.InvoiceCount, acc.RecommendedAction)
		if paced {
			next := ""
			if acc.AccountDetails != nil {
				next = acc.NextContactAfter
			}
			fmt.Fprintf(tw, "%s\t", next)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	s := &a.Summary
	fmt.Fprintf(&w, "\n%d priority account(s) (%d high, %d medium) from %d invoice(s) as of %s; total open %s\n",
		len(a.Accounts), s.AccountsByPriority.High, s.AccountsByPriority.Medium, len(in.Invoices), in.AsOf, money(base, a.TotalOpenCents))

	fmt.Fprintln(&w)
	tw = tabwriter.NewWriter(&w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGING\tAMOUNT\tINVOICES\t")
	for _, b := range s.Aging {
		fmt.Fprintf(tw, "%s\t%s\t%d\t\n", b.Bucket, money(base, b.AmountCents), b.InvoiceCount)
	}
	tw.Flush()
	fmt.Fprintln(&w)
	fmt.Fprintln(tw, "LEFT OUT\tINVOICES\tCUSTOMERS\t")
	for _, l := range []struct {
		reason string
		n      portfolio.Count
	}{
		{"do not contact", s.LeftOut.DoNotContact}, {"paid", s.LeftOut.Paid}, {"void", s.LeftOut.Void},
		{"disputed", s.LeftOut.Disputed}, {"promise pending", s.LeftOut.PromisePending},
	} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", l.reason, l.n.Invoices, l.n.Customers)
	}
	tw.Flush()
	if len(s.Rates) > 0 {
		fmt.Fprintln(&w)
	}
	for _, r := range s.Rates {
		fmt.Fprintf(&w, "rate: 1 %s = %s %s (%s)\n", r.Currency, r.Rate, base, r.Date)
	}
	for _, wn := range a.Warnings {
		fmt.Fprintf(&w, "warning: %s: customer %s has %d different names; its account shows the name on its first open invoice\n",
			wn.Code, wn.CustomerID, wn.NameCount)
	}
	// The tables pad every cell; a line ends at its text.
	var b strings.Builder
	for line := range strings.Lines(w.String()) {
		b.WriteString(strings.TrimRight(line, " \n"))
		b.WriteByte('\n')
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// money writes an amount in the base currency's minor unit as the
// analysis' reasons do.
func money(base string, cents int64) string { return value.FormatMoney(cents, base) }

func readInput(name string, stdin io.Reader, max int) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(max)+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > max {
		return nil, fmt.Errorf("read %s: larger than %d bytes", name, max)
	}
	return data, nil
}
