package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
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
