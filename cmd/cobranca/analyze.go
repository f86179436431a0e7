package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"text/tabwriter"

	"github.com/cobranca/cobranca/internal/portfolio"
)

// maxPortfolioFile bounds what `cobranca analyze` reads; a valid portfolio of
// the largest size is far below it.
const maxPortfolioFile = 8 << 20

func analyze(_ context.Context, e env, fs *flagSet, args []string) error {
	asJSON := fs.Bool("json", false, "print exactly the tool's structured result as JSON")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(e.stderr, "cobranca analyze: want one FILE, or - to read stdin")
		fs.help(e.stderr)
		return exitUsage
	}
	data, err := readInput(fs.Arg(0), e.stdin)
	if err != nil {
		return err
	}
	in, err := portfolio.Parse(data)
	if err != nil {
		return fmt.Errorf("invalid portfolio: %w", err)
	}
	a := portfolio.Analyze(in)
	if *asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(a)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PRIORITY\tCUSTOMER\tAMOUNT\tDAYS OVERDUE\tACTION\t")
	for _, acc := range a.Accounts {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", acc.Priority, acc.CustomerName+" ("+acc.CustomerID+")",
			portfolio.FormatBRL(acc.AmountCents), strconv.Itoa(acc.DaysOverdue), acc.RecommendedAction)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(e.stdout, "\n%d priority account(s) from %d invoice(s) as of %s; total open %s\n",
		len(a.Accounts), len(in.Invoices), in.AsOf, portfolio.FormatBRL(a.TotalOpenCents)); err != nil {
		return err
	}
	for _, w := range a.Warnings {
		if _, err := fmt.Fprintf(e.stdout, "warning: %s: customer %s has %d different names; its account shows the name on its first open invoice\n",
			w.Code, w.CustomerID, w.NameCount); err != nil {
			return err
		}
	}
	return nil
}

func readInput(name string, stdin io.Reader) ([]byte, error) {
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxPortfolioFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxPortfolioFile {
		return nil, fmt.Errorf("read %s: larger than %d bytes", name, maxPortfolioFile)
	}
	return data, nil
}
