package web_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

var exportRE = regexp.MustCompile(`<a href="(/console/audit/export[^"]*)" download>`)

// TestConsoleAudit: the audit trail page filters the events, names a bad filter, shows the
// verify form only to who may verify (a viewer's forged one is refused and audited), verifies
// the chain (audited), speaks both languages, and its export downloads a file VerifyFile
// checks.
func TestConsoleAudit(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		ctx := context.Background()
		for _, ev := range []auditlog.Event{
			{Name: "collections.portfolio.analyzed", Tool: "collections.analyze_portfolio", Risk: "low", Subject: "ana", Actor: "collector-bot", ClientID: "collector-bot", Outcome: auditlog.Allowed},
			{Name: "collections.reminder.sent", Tool: "collections.send_reminder", Risk: "critical", Subject: "ana", Actor: "collector-bot", ClientID: "collector-bot", Outcome: auditlog.Denied, FailureCode: "insufficient_scope"},
			{Name: "collections.portfolio.analyzed", Tool: "collections.analyze_portfolio", Risk: "low", Subject: "davi", ClientID: "cli", Outcome: auditlog.Allowed},
		} {
			if err := e.alog.Record(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}

		b := e.browser(t)
		p := b.open(t, web.AuditPath, viewer)
		if p.resp.StatusCode != http.StatusOK || strings.Count(p.body, "<code>collections.analyze_portfolio</code>") != 2 ||
			!strings.Contains(p.body, "<code>collections.send_reminder</code>") || !strings.Contains(p.body, "<code>insufficient_scope</code>") {
			t.Fatalf("the viewer's trail = %d, want the 3 events:\n%s", p.resp.StatusCode, p.body)
		}
		if strings.Contains(p.body, `name="verify"`) {
			t.Errorf("the viewer is offered to verify the chain:\n%s", p.body)
		}
		if !strings.Contains(p.body, `<a href="/console/audit" aria-current="page">`) && !strings.Contains(p.body, "Audit trail") {
			t.Errorf("the trail is not in the navigation:\n%s", p.body)
		}

		// Filters.
		for q, want := range map[string]int{
			"tool=collections.send_reminder": 1, "risk=low": 2, "outcome=denied": 1, "subject=davi": 1,
			"actor=collector-bot": 2, "clientId=cli": 1, "since=2000-01-01": 3, "until=2000-01-01T10:00": 0,
			"outcome=allowed&subject=ana": 1,
		} {
			f := b.get(t, web.AuditPath+"?"+q)
			if got := strings.Count(f.body, `<td data-label="Event">`); f.resp.StatusCode != http.StatusOK || got != want {
				t.Errorf("?%s: %d with %d events, want 200 with %d:\n%s", q, f.resp.StatusCode, got, want, f.body)
			}
		}
		// A bad filter names its field.
		for q, field := range map[string]string{"outcome=won": "outcome", "risk=extreme": "risk", "since=yesterday": "since",
			"until=2026-13-01": "until", "since=2026-12-02&until=2026-12-01": "until", "after=zz": "after",
			"tool=" + url.QueryEscape("a\x00b"): "tool", "subject=" + strings.Repeat("s", 2000): "subject"} {
			f := b.get(t, web.AuditPath+"?"+q)
			refused(t, "?"+q, f, http.StatusBadRequest, string(failure.InvalidArguments))
			if !strings.Contains(f.body, string(failure.InvalidArguments)+": "+field+": ") {
				t.Errorf("?%s does not name %s:\n%s", q, field, f.body)
			}
		}

		// Portuguese.
		b.lang = "pt-BR"
		pt := b.get(t, web.AuditPath)
		if !strings.Contains(pt.body, "<h1>Trilha de auditoria</h1>") || !strings.Contains(pt.body, "Eventos de auditoria") ||
			!regexp.MustCompile(`>\d\d/\d\d/20\d\d \d\d:\d\d</time>`).MatchString(pt.body) {
			t.Errorf("the trail in Portuguese:\n%s", pt.body)
		}
		bad := b.get(t, web.AuditPath+"?outcome=won")
		if !strings.Contains(bad.body, "Um campo não é válido") || !strings.Contains(bad.body, "outcome") {
			t.Errorf("a bad filter in Portuguese:\n%s", bad.body)
		}
		b.lang = ""

		// The viewer forges the verify form: refused, and the refusal audited.
		csrf := html.UnescapeString(csrfRE.FindStringSubmatch(p.body)[1])
		forged := b.do(t, http.MethodPost, web.AuditPath, url.Values{"csrf": {csrf}, "verify": {"chain"}}, b.sameSite())
		refused(t, "the viewer's forged verify", forged, http.StatusForbidden, string(web.CodeConsoleRole))
		e.refusals.Flush(ctx)
		if n := e.audited(t, web.EventConsoleRefused, auditlog.Denied); n != 1 {
			t.Errorf("%d refusals audited, want the forged verify's", n)
		}
		if n := e.audited(t, web.EventAuditVerified, auditlog.Allowed); n != 0 {
			t.Errorf("the viewer's forged verify verified (%d)", n)
		}
		// A form from another site is refused before anything.
		cross := b.do(t, http.MethodPost, web.AuditPath, url.Values{"csrf": {csrf}}, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
		if cross.resp.StatusCode != http.StatusForbidden {
			t.Errorf("a cross-site verify = %d, want 403", cross.resp.StatusCode)
		}

		// The approver verifies, with the filters kept.
		ab := e.browser(t)
		ab.open(t, web.AuditPath, approver)
		ap := ab.get(t, web.AuditPath+"?risk=low")
		if !strings.Contains(ap.body, `<form method="post" action="/console/audit?risk=low">`) || !strings.Contains(ap.body, `name="verify"`) {
			t.Fatalf("the approver's trail offers no verify form keeping the filters:\n%s", ap.body)
		}
		v := ab.do(t, http.MethodPost, "/console/audit?risk=low", url.Values{"csrf": {html.UnescapeString(csrfRE.FindStringSubmatch(ap.body)[1])}}, ab.sameSite())
		if v.resp.StatusCode != http.StatusOK || !strings.Contains(v.body, "The chain verified") || !strings.Contains(v.body, "OK ") ||
			strings.Count(v.body, `<td data-label="Event">`) != 3 { // the 2 low-risk calls, and the verification itself (read-only: low)
			t.Errorf("verifying = %d, want the report over the filtered trail:\n%s", v.resp.StatusCode, v.body)
		}
		if n := e.audited(t, web.EventAuditVerified, auditlog.Allowed); n != 1 {
			t.Errorf("%d verifications audited, want 1", n)
		}

		// The export, through the page's link.
		if _, err := e.alog.SealCommitted(ctx); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"", "?risk=low"} {
			page := ab.get(t, web.AuditPath+q)
			m := exportRE.FindStringSubmatch(page.body)
			if m == nil {
				t.Fatalf("no export link on %s:\n%s", web.AuditPath+q, page.body)
			}
			x := ab.do(t, http.MethodGet, html.UnescapeString(m[1]), nil, nil)
			h := x.resp.Header
			if x.resp.StatusCode != http.StatusOK || !strings.HasPrefix(h.Get("Content-Disposition"), `attachment; filename="cobranca-audit-`) ||
				h.Get("Content-Security-Policy") == "" || h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Content-Type"), "application/jsonl") {
				t.Fatalf("the export %s = %d %v", m[1], x.resp.StatusCode, h)
			}
			rep, err := auditlog.VerifyFile(strings.NewReader(x.body), e.auditKey, nil)
			if err != nil || rep.Problem != nil || rep.Count < 2 || rep.Gaps != (q != "") {
				t.Errorf("the export %s verifies as %v, %v (gaps %v):\n%s", m[1], rep, err, rep.Gaps, x.body)
			}
			if q != "" && strings.Contains(x.body, "collections.send_reminder") {
				t.Errorf("the export of risk=low holds the critical event:\n%s", x.body)
			}
		}
		if n := e.audited(t, web.EventAuditExported, auditlog.Allowed); n != 2 {
			t.Errorf("%d exports audited, want 2", n)
		}
		refused(t, "an export with a bad filter", ab.get(t, web.AuditExportPath+"?outcome=won"), http.StatusBadRequest, string(failure.InvalidArguments))

		// A changed event: the verification says where the chain broke. (On SQLite, whose
		// append-only triggers the test's connection may drop; PostgreSQL's app role cannot
		// change the log at all, and auditlog's tamper tests cover both.)
		if db.Dialect() == store.SQLite {
			for _, s := range []string{"DROP TRIGGER audit_event_no_update", `UPDATE audit_event SET subject = 'mallory' WHERE subject = 'davi'`} {
				if _, err := db.Exec(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			ap = ab.get(t, web.AuditPath)
			v = ab.do(t, http.MethodPost, web.AuditPath, url.Values{"csrf": {html.UnescapeString(csrfRE.FindStringSubmatch(ap.body)[1])}}, ab.sameSite())
			if v.resp.StatusCode != http.StatusOK || !strings.Contains(v.body, "The chain is broken") || !strings.Contains(v.body, "FAIL seq 3: altered") {
				t.Errorf("verifying a changed chain = %d, want the break named:\n%s", v.resp.StatusCode, v.body)
			}
			var brokenAt int64
			if err := db.QueryRow(ctx, `SELECT COUNT(*) FROM audit_event WHERE event = $1 AND details LIKE '%"brokenAt":3%'`, web.EventAuditVerified).Scan(&brokenAt); err != nil || brokenAt != 1 {
				t.Errorf("the verification of the changed chain audited with brokenAt 3: %d, %v", brokenAt, err)
			}
		}

		// An agent sees nothing of it, the export neither.
		ag := e.browser(t)
		refused(t, "an agent's trail", ag.open(t, web.AuditPath, agent("collector-bot")), http.StatusForbidden, string(web.CodeConsoleAgent))
		refused(t, "an agent's export", ag.get(t, web.AuditExportPath), http.StatusForbidden, string(web.CodeConsoleAgent))
	})
}

// TestConsoleAuditScanBound: a filter on a rare value stops a page at the trail's scan bound
// (auditlog.TrailScan): the page says how far back it searched and links to the next, which
// finds the older event.
func TestConsoleAuditScanBound(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		ctx := context.Background()
		// The rare event, then a scan bound's worth of others, inserted at the commit: on
		// PostgreSQL in one round trip rather than one each.
		err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			for i := range 1 + auditlog.TrailScan {
				subject := "common"
				if i == 0 {
					subject = "rare"
				}
				s, err := e.alog.AppendStmt(auditlog.Event{Name: "collections.portfolio.analyzed", Subject: subject, Outcome: auditlog.Allowed})
				if err != nil {
					return err
				}
				tx.Defer(s)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		b := e.browser(t)
		b.open(t, web.AuditPath, viewer)
		p := b.get(t, web.AuditPath+"?subject=rare")
		next := regexp.MustCompile(`<a href="([^"]*)" rel="next">`).FindStringSubmatch(p.body)
		if p.resp.StatusCode != http.StatusOK || !strings.Contains(p.body, "This page searched back to <time") || next == nil ||
			strings.Contains(p.body, `<td data-label="Event">`) {
			t.Fatalf("the page of a rare subject = %d, want no event, how far it searched and a next page:\n%s", p.resp.StatusCode, p.body)
		}
		older := b.get(t, html.UnescapeString(next[1]))
		if n := strings.Count(older.body, `<td data-label="Event">`); older.resp.StatusCode != http.StatusOK || n != 1 ||
			!strings.Contains(older.body, "rare") || !strings.Contains(older.body, ">First page<") {
			t.Errorf("the next page = %d with %d events, want rare's:\n%s", older.resp.StatusCode, n, older.body)
		}
	})
}
