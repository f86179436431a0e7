package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// servedMetrics starts `cobranca serve` (development, SQLite), makes one tool call and one
// request over the per-origin budget so that the labelled families have series, and returns
// the names /metrics serves: every family, and a histogram's _bucket, _sum and _count.
func servedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	addr := freeAddr(t)
	environ := []string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + addr, "COBRANCA_METRICS_ADDR=127.0.0.1:0", "COBRANCA_RATE_ORIGIN=1/1h,burst=1"}
	token := strings.TrimSpace(mustRun(t, environ, "token", "--sub", "ops", "--scope", "collections:read"))
	logs, _ := startServe(t, environ...)
	metricsURL, ok := logs.logged("metrics served")
	if !ok {
		t.Fatalf("no metrics listener:\n%s", logs.String())
	}
	const tool = "collections.analyze_portfolio"
	for i, want := range []int{http.StatusOK, http.StatusTooManyRequests} {
		resp := postMCP(t, addr, token, tool, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"`+tool+`","arguments":{"asOf":"2026-12-01","invoices":[]}}}`)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			names[f[2]] = true
			if f[3] == "histogram" || f[3] == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[2]+s] = true
				}
			}
		}
	}
	for _, want := range []string{"cobranca_tool_calls_total", "cobranca_ratelimit_refusals_total", metricApprovalsPending, "cobranca_build_info"} {
		if !names[want] {
			t.Fatalf("/metrics does not serve %s: the test's calls did not take", want)
		}
	}
	return names
}

// postMCP posts body, a JSON-RPC tools/call of tool, to the server at addr as a 2026-07-28
// client does (the Mcp-* headers), with token.
func postMCP(t *testing.T, addr, token, tool, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": tool, "Authorization": "Bearer " + token} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// checkQuery checks that the PromQL query of what names metrics and only served ones, and
// marks them used.
func checkQuery(t *testing.T, what, query string, served, used map[string]bool) {
	t.Helper()
	refs := metricRef.FindAllString(query, -1)
	if len(refs) == 0 {
		t.Errorf("%s queries no metric: %q", what, query)
	}
	for _, m := range refs {
		used[m] = true
		if !served[m] {
			t.Errorf("%s queries %s, which cobranca does not serve", what, m)
		}
	}
}

// checkCovered checks that every operator metric is among used, the metrics of what.
func checkCovered(t *testing.T, what string, used map[string]bool) {
	t.Helper()
	for _, m := range operatorMetrics {
		if !used[m] {
			t.Errorf("no %s queries %s", what, m)
		}
	}
}

// metricRef finds the metric names in a PromQL expression: cobranca's, the Go runtime's and
// the process's (label names and functions are not among them).
var metricRef = regexp.MustCompile(`\b(?:cobranca|go|process)_[a-z0-9_]+\b`)

// operatorMetrics are the metrics an operator alerts on (issue 16): each has an alert rule,
// a dashboard panel and a line in docs/operations.md.
var operatorMetrics = []string{metricApprovalsPending, metricApprovalOldestAge, metricOutboxQueued, metricOutboxRetrying,
	metricOutboxUndeliverable, metricAuditUnsealed, metricAuditOldestUnsealed, metricIdempotencyKeysStored}

// alertRule is one rule of docs/alerts.yml.
type alertRule struct {
	fields map[string]string // alert, expr, for, severity, summary, description
}

// readAlerts reads docs/alerts.yml, written in the subset of YAML Prometheus rule files use:
// a list of rules, each `- alert:` then its keys, labels and annotations one level deeper, every
// value on one line.
func readAlerts(t *testing.T) []alertRule {
	t.Helper()
	b, err := os.ReadFile("../../docs/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules []alertRule
	for n, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(trimmed, "- "), ":")
		if !ok {
			t.Fatalf("docs/alerts.yml:%d: %q is not key: value", n+1, trimmed)
		}
		value = strings.Trim(strings.TrimSpace(value), `"`)
		if strings.HasPrefix(trimmed, "- alert:") {
			rules = append(rules, alertRule{fields: map[string]string{}})
		}
		if len(rules) == 0 {
			continue // groups:, - name:, rules:
		}
		r := rules[len(rules)-1]
		if _, dup := r.fields[key]; dup {
			t.Fatalf("docs/alerts.yml:%d: %s twice in rule %s", n+1, key, r.fields["alert"])
		}
		r.fields[key] = value
	}
	return rules
}

// TestAlertRules: every rule of docs/alerts.yml queries metrics cobranca serves, says its
// severity and what it means, and every operator metric has a rule.
func TestAlertRules(t *testing.T) {
	served := servedMetrics(t)
	rules := readAlerts(t)
	used := map[string]bool{}
	for _, r := range rules {
		for _, k := range []string{"alert", "expr", "labels", "severity", "annotations", "summary", "description"} {
			if _, ok := r.fields[k]; !ok {
				t.Errorf("alert %q has no %s", r.fields["alert"], k)
			}
		}
		checkQuery(t, "alert "+r.fields["alert"], r.fields["expr"], served, used)
	}
	checkCovered(t, "alert rule", used)
}

// TestGrafanaDashboard: docs/grafana-dashboard.json is a dashboard whose every query names
// metrics cobranca serves, with a panel for every operator metric.
func TestGrafanaDashboard(t *testing.T) {
	served := servedMetrics(t)
	b, err := os.ReadFile("../../docs/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr  string `json:"expr"`
				RefID string `json:"refId"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("docs/grafana-dashboard.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("docs/grafana-dashboard.json: title %q, uid %q, %d panels", d.Title, d.UID, len(d.Panels))
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			if q.RefID == "" {
				t.Errorf("panel %q: a query has no refId", p.Title)
			}
			checkQuery(t, "panel "+strconv.Quote(p.Title), q.Expr, served, used)
		}
	}
	checkCovered(t, "panel", used)
}

// TestOperationsDocListsMetrics: docs/operations.md's metrics table has a row for every
// cobranca_ metric /metrics serves, and names no other.
func TestOperationsDocListsMetrics(t *testing.T) {
	served := servedMetrics(t)
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Metrics\n")
	if !ok {
		t.Fatal("docs/operations.md has no ## Metrics section")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "| `cobranca_") {
			cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
			rows = append(rows, metricRef.FindAllString(cell, -1)...)
		}
	}
	for m := range served {
		if strings.HasPrefix(m, "cobranca_") && !strings.HasSuffix(m, "_bucket") && !strings.HasSuffix(m, "_sum") && !strings.HasSuffix(m, "_count") && !slices.Contains(rows, m) {
			t.Errorf("docs/operations.md's metrics table has no row for %s", m)
		}
	}
	for _, m := range rows {
		if !served[m] {
			t.Errorf("docs/operations.md's metrics table lists %s, which cobranca does not serve", m)
		}
	}
}
