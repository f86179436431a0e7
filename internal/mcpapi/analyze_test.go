package mcpapi

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// variantsArgs is a portfolio where customer c1 comes under three names and
// customer c2, left out for doNotContact, under two.
const variantsArgs = `{"asOf":"2026-03-01","invoices":[
{"id":"i1","customerId":"c1","customerName":"ACME Ltda","dueDate":"2026-01-10","amountCents":500,"status":"paid","doNotContact":false},
{"id":"i2","customerId":"c1","customerName":"Acme Ltda","dueDate":"2026-02-01","amountCents":700,"status":"open","doNotContact":false},
{"id":"i3","customerId":"c1","customerName":"Acme  Ltda","dueDate":"2026-02-10","amountCents":300,"status":"open","doNotContact":false},
{"id":"i4","customerId":"c2","customerName":"Beta SA","dueDate":"2026-02-01","amountCents":900,"status":"open","doNotContact":false},
{"id":"i5","customerId":"c2","customerName":"Beta S.A.","dueDate":"2026-02-01","amountCents":900,"status":"open","doNotContact":true}]}`

// TestAnalyzeNameVariants: over a real client, a customer under several
// names is analyzed (not refused) under the name on its first open invoice,
// and reported in warnings by id and count, with no name; the summary says
// so and the audit details count it.
func TestAnalyzeNameVariants(t *testing.T) {
	sess := connect(t, newTestHandler(t))
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: json.RawMessage(variantsArgs)})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		t.Fatalf("analyze(name variants) isError: %s", text)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Accounts []struct{ CustomerID, CustomerName string }
		Warnings []map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wantWarnings := []map[string]any{{"code": "customer_name_variants", "customerId": "c1", "nameCount": float64(3)}}
	if diff := cmp.Diff(wantWarnings, got.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if len(got.Accounts) != 1 || got.Accounts[0].CustomerName != "Acme Ltda" {
		t.Errorf("accounts = %+v, want c1 alone, named Acme Ltda (its first open invoice)", got.Accounts)
	}
	for _, name := range []string{"ACME Ltda", "Acme  Ltda", "Beta", "c2"} {
		if strings.Contains(string(b), name) || strings.Contains(text, name) {
			t.Errorf("the result names %q: %s / %s", name, b, text)
		}
	}
	if !strings.Contains(text, "1 warning(s)") {
		t.Errorf("text = %q, want it to point at the warning", text)
	}

	eff, err := analyzeLogic(context.Background(), json.RawMessage(variantsArgs))
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int64{"invoiceCount": 5, "accountCount": 1, "warningCount": 1}; !cmp.Equal(eff.Details, want) {
		t.Errorf("Details = %v, want %v", eff.Details, want)
	}
}

// TestAnalyzeRefusesDeceptiveText: over a real client, text that can
// deceive a person is a tool error with invalid_text and the field path,
// which never repeats the text.
func TestAnalyzeRefusesDeceptiveText(t *testing.T) {
	sess := connect(t, newTestHandler(t))
	for _, tt := range []struct{ name, value, field string }{
		{"bidirectional override", `Ana \u202eadaL`, "invoices[1].customerName"},
		{"tag characters", `Ana\udb40\udc69\udb40\udc67`, "invoices[1].customerName"},
		{"zero width space", `c\u200b1`, "invoices[1].customerId"},
		{"blank", `\u00a0 \u3000`, "invoices[1].id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			second := map[string]string{"id": "i2", "customerId": "c1", "customerName": "Ana"}
			second[tt.field[strings.LastIndex(tt.field, ".")+1:]] = tt.value // JSON string text, escapes kept
			args := `{"asOf":"2026-03-01","invoices":[` +
				`{"id":"i1","customerId":"c1","customerName":"Ana","dueDate":"2026-01-10","amountCents":500,"status":"open","doNotContact":false},` +
				`{"id":"` + second["id"] + `","customerId":"` + second["customerId"] + `","customerName":"` + second["customerName"] +
				`","dueDate":"2026-01-10","amountCents":500,"status":"open","doNotContact":false}]}`
			res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: collections.AnalyzeName, Arguments: json.RawMessage(args)})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if !res.IsError || !strings.Contains(text, "invalid_text") || !strings.Contains(text, tt.field) {
				t.Errorf("analyze(%s) = isError %v, %q; want an invalid_text error naming %s", tt.name, res.IsError, text, tt.field)
			}
			b, _ := json.Marshal(res)
			for _, payload := range []string{"adaL", "Ana\\u", "c\\u200b1", "\u202e", "\u200b"} {
				if strings.Contains(string(b), payload) {
					t.Errorf("the error result repeats the text (%q): %s", payload, b)
				}
			}
		})
	}
}
