package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// variantsPortfolio has customer c-1 under two names, c-2 under one.
const variantsPortfolio = `{"asOf":"2026-03-01","invoices":[
{"id":"i1","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-02-01","amountCents":700,"status":"open","doNotContact":false},
{"id":"i2","customerId":"c-2","customerName":"Bruno SA","dueDate":"2026-02-20","amountCents":300,"status":"open","doNotContact":false},
{"id":"i3","customerId":"c-1","customerName":"ANA LTDA","dueDate":"2026-02-10","amountCents":300,"status":"open","doNotContact":false}]}`

// TestAnalyzeWarnings: the table is followed by one line per warning, by
// customer id and count; --json carries them in warnings.
func TestAnalyzeWarnings(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"analyze", "-"}, nil, strings.NewReader(variantsPortfolio), &out, &errOut); err != nil {
		t.Fatalf("analyze: %v (%s)", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := "warning: customer_name_variants: customer c-1 has 2 different names; its account shows the name on its first open invoice"
	if lines[len(lines)-1] != want || strings.Count(out.String(), "warning:") != 1 {
		t.Errorf("analyze printed\n%s\nwant it to end with the one line\n%s", out.String(), want)
	}
	if strings.Contains(out.String(), "ANA LTDA") || !strings.Contains(out.String(), "Ana Ltda (c-1)") {
		t.Errorf("analyze printed\n%s\nwant c-1 under the name of its first open invoice only", out.String())
	}

	out.Reset()
	if err := run(t.Context(), []string{"analyze", "--json", "-"}, nil, strings.NewReader(variantsPortfolio), &out, &errOut); err != nil {
		t.Fatalf("analyze --json: %v (%s)", err, errOut.String())
	}
	var got struct{ Warnings []map[string]any }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Warnings) != 1 || got.Warnings[0]["customerId"] != "c-1" || got.Warnings[0]["nameCount"] != 2.0 {
		t.Errorf("analyze --json warnings = %v, want c-1 with 2 names", got.Warnings)
	}
}

// extendedPortfolio uses every optional field of analyze_portfolio 1.1.0:
// c-1 owes in BRL and USD (converted at 5.17) and was contacted two days
// ago; c-2's one invoice is disputed; c-3 promised to pay after asOf; c-4
// broke a promise; c-5 is not to be contacted; c-6 paid, c-7's invoice is
// void.
const extendedPortfolio = `{"asOf":"2026-03-01","invoices":[
{"id":"i1","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-01-15","amountCents":100000,"status":"open","doNotContact":false},
{"id":"i2","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-02-20","amountCents":20000,"status":"open","doNotContact":false,"currency":"USD"},
{"id":"i3","customerId":"c-2","customerName":"Bruno SA","dueDate":"2026-02-10","amountCents":50000,"status":"open","doNotContact":false,"disputed":true,"disputeReason":"Mercadoria não entregue"},
{"id":"i4","customerId":"c-3","customerName":"Carla ME","dueDate":"2026-02-01","amountCents":30000,"status":"open","doNotContact":false,"promiseToPayDate":"2026-03-05"},
{"id":"i5","customerId":"c-4","customerName":"Davi Com","dueDate":"2026-02-25","amountCents":15000,"status":"open","doNotContact":false,"promiseToPayDate":"2026-02-26"},
{"id":"i6","customerId":"c-5","customerName":"Eva SA","dueDate":"2025-11-01","amountCents":5000,"status":"open","doNotContact":true},
{"id":"i7","customerId":"c-6","customerName":"Fabio","dueDate":"2026-01-01","amountCents":7000,"status":"paid","doNotContact":false},
{"id":"i8","customerId":"c-1","customerName":"Ana Ltda","dueDate":"2026-03-10","amountCents":10000,"status":"open","doNotContact":false},
{"id":"i9","customerId":"c-7","customerName":"Gil","dueDate":"2026-01-01","amountCents":100,"status":"void","doNotContact":false}],
"rates":[{"currency":"USD","rate":5.17,"date":"2026-02-27"}],
"customers":[{"customerId":"c-1","lastContactedAt":"2026-02-27T15:00:00-03:00"},{"customerId":"c-4","lastContactedAt":"2026-02-20"},{"customerId":"c-9","lastContactedAt":"2026-02-28"}]}`

// extendedTable is what `cobranca analyze --pacing 3d` prints for
// extendedPortfolio, worked out by hand from the rules (docs/contracts,
// api.md): c-1 is 45 days overdue with R$ 1.000,00 + US$ 200,00 × 5.17 +
// R$ 100,00 not yet due, and may be contacted again 3 days after
// 2026-02-27T18:00Z; c-4's broken promise makes it high; every open invoice
// of a contactable customer is in the aging, disputed and promised ones too.
// (Written with spaces; FormatBRL puts a no-break space after R$.)
var extendedTable = strings.ReplaceAll(`PRIORITY  CUSTOMER        AMOUNT       DAYS OVERDUE  AGING  INVOICES  ACTION        NEXT CONTACT
high      Ana Ltda (c-1)  R$ 2.134,00  45            31-60  3         human_review  2026-03-02T18:00:00Z
high      Davi Com (c-4)  R$ 150,00    4             1-30   1         human_review

2 priority account(s) (2 high, 0 medium) from 9 invoice(s) as of 2026-03-01; total open R$ 3.084,00

AGING    AMOUNT       INVOICES
current  R$ 100,00    1
1-30     R$ 1.984,00  4
31-60    R$ 1.000,00  1
61-90    R$ 0,00      0
90+      R$ 0,00      0

LEFT OUT         INVOICES  CUSTOMERS
do not contact   1         1
paid             1         1
void             1         1
disputed         1         1
promise pending  1         1

rate: 1 USD = 5.17 BRL (2026-02-27)
`, "R$ ", "R$\u00a0")

// TestAnalyzeExtended: the table shows each account's aging bucket,
// invoice count and next contact, then the summary: accounts by priority,
// aging, what was left out, the rates used. --pacing defaults to
// COBRANCA_CONTACT_PACING; 0 turns it off, and the NEXT CONTACT column goes.
func TestAnalyzeExtended(t *testing.T) {
	analyze := func(environ []string, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), append(append([]string{"analyze"}, args...), "-"), environ, strings.NewReader(extendedPortfolio), &out, &errOut)
		return out.String() + errOut.String(), err
	}
	for _, tt := range []struct {
		name    string
		environ []string
		args    []string
	}{
		{"flag", nil, []string{"--pacing", "3d"}},
		{"variable", []string{"COBRANCA_CONTACT_PACING=72h"}, nil},
		{"flag over variable", []string{"COBRANCA_CONTACT_PACING=bad"}, []string{"--pacing=72h"}},
	} {
		got, err := analyze(tt.environ, tt.args...)
		if err != nil || got != extendedTable {
			t.Errorf("%s: analyze = %v, printed\n%s\nwant\n%s", tt.name, err, got, extendedTable)
		}
	}
	got, err := analyze([]string{"COBRANCA_CONTACT_PACING=3d"}, "--pacing", "0")
	if err != nil || strings.Contains(got, "NEXT CONTACT") || strings.Contains(got, "2026-03-02T18:00:00Z") || !strings.Contains(got, "high      Ana Ltda (c-1)  R$\u00a02.134,00  45") {
		t.Errorf("analyze --pacing 0 = %v, printed\n%s\nwant the table without NEXT CONTACT", err, got)
	}
	if got, err := analyze([]string{"COBRANCA_CONTACT_PACING=366d"}); err == nil || !strings.Contains(got+err.Error(), "COBRANCA_CONTACT_PACING") {
		t.Errorf("analyze with COBRANCA_CONTACT_PACING=366d = %v, %s; want an error naming the variable", err, got)
	}
	if got, err := analyze(nil, "--pacing", "3 days"); err == nil || !strings.Contains(got, "pacing") {
		t.Errorf("analyze --pacing '3 days' = %v, %s; want a usage error naming the flag", err, got)
	}

	// --json is the tool's structured result, summary included.
	got, err = analyze(nil, "--json", "--pacing", "3d")
	if err != nil {
		t.Fatalf("analyze --json: %v: %s", err, got)
	}
	var a struct {
		Accounts []struct {
			CustomerID       string
			NextContactAfter string
			Conversions      []map[string]any
		}
		Summary struct {
			Aging []map[string]any
			Rates []map[string]any
		}
	}
	if err := json.Unmarshal([]byte(got), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.Accounts) != 2 || a.Accounts[0].NextContactAfter != "2026-03-02T18:00:00Z" || len(a.Accounts[0].Conversions) != 1 ||
		len(a.Summary.Aging) != 5 || len(a.Summary.Rates) != 1 || a.Summary.Rates[0]["rate"] != 5.17 {
		t.Errorf("analyze --json =\n%s\nwant c-1 paced and converted, five aging buckets, the USD rate", got)
	}
}

// TestServeContactPacing: serve passes COBRANCA_CONTACT_PACING to
// analyze_portfolio: over MCP, the account contacted two days before asOf
// may be contacted again three days after, and the one contacted long ago
// has no nextContactAfter.
func TestServeContactPacing(t *testing.T) {
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_CONTACT_PACING=3d"}
	startServe(t, environ...)
	var tok bytes.Buffer
	if err := run(t.Context(), []string{"token", "--sub", "alice", "--agent", "copilot", "--scope", "collections:read"}, environ, nil, &tok, &tok); err != nil {
		t.Fatalf("token: %v: %s", err, tok.String())
	}
	sess := connect(t, addr, strings.TrimSpace(tok.String()), nil)
	var args map[string]any
	if err := json.Unmarshal([]byte(extendedPortfolio), &args); err != nil {
		t.Fatal(err)
	}
	res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("analyze_portfolio = %+v, %v", res, err)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var got portfolio.Analysis
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	next := map[string]string{}
	for _, acc := range got.Accounts {
		next[acc.CustomerID] = ""
		if acc.AccountDetails != nil {
			next[acc.CustomerID] = acc.NextContactAfter
		}
	}
	if want := map[string]string{"c-1": "2026-03-02T18:00:00Z", "c-4": ""}; !maps.Equal(next, want) {
		t.Errorf("nextContactAfter by customer = %v, want %v (result %s)", next, want, b)
	}
}
