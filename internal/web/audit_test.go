package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/web"
)

// refusalEvent is an audited refusal as the store holds it.
type refusalEvent struct {
	event, tool, outcome, code, client string
	count                              int64
}

func refusalEvents(t *testing.T, db store.DB) []refusalEvent {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT event, tool, outcome, failure_code, args_digest, details FROM audit_event
WHERE event IN ($1, $2) ORDER BY id`, signin.EventFormRefused, signin.EventSigninRefused)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var evs []refusalEvent
	for rows.Next() {
		var ev refusalEvent
		var details string
		if err := rows.Scan(&ev.event, &ev.tool, &ev.outcome, &ev.code, &ev.client, &details); err != nil {
			t.Fatal(err)
		}
		var d map[string]int64
		if err := json.Unmarshal([]byte(details), &d); err != nil {
			t.Fatal(err)
		}
		ev.count = d["count"]
		evs = append(evs, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestRefusalsAudited (issue 25): every refusal anyone can cause at the forms — the approval's
// and the write-off's: from another site, without the session's CSRF token, without a session
// — and at the sign-in callback — no or another browser's sign-in, a bad nonce, a denied
// sign-in, a step-up not met — is audited as a denied refusal of its class, counted: one event
// per class and client a minute, on both stores.
func TestRefusalsAudited(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		e := newEnv(t, db, false)
		a := e.ask(t, tool)
		path := "/approvals/" + a.ID
		b := e.browser(t)
		p := b.open(t, path, person("bruno", "urn:password"))
		form := url.Values{"csrf": {csrfRE.FindStringSubmatch(p.body)[1]}, "decision": {"approve"}}
		cross := map[string]string{"Sec-Fetch-Site": "cross-site"}
		for range 3 {
			refused(t, "a cross-site approval", b.do(t, http.MethodPost, path, form, cross), http.StatusForbidden, string(signin.CodeCrossOrigin))
		}
		refused(t, "an approval without the CSRF token", b.do(t, http.MethodPost, path, url.Values{"decision": {"approve"}}, b.sameSite()),
			http.StatusForbidden, string(signin.CodeCSRFInvalid))
		refused(t, "an approval signed out", e.browser(t).do(t, http.MethodPost, path, form, b.sameSite()), http.StatusUnauthorized, string(signin.CodeNotSignedIn))

		w := e.browser(t)
		wp := w.open(t, web.WriteOffsPath, controller("bruno", mfa))
		next := map[string]string{"invoiceId": "NF-77", "customerId": "C-1", "amountCents": "500", "reason": "prescrita"}
		refused(t, "a cross-site write-off", w.writeOff(t, wp, next, cross), http.StatusForbidden, string(signin.CodeCrossOrigin))
		refused(t, "a write-off without the CSRF token", w.writeOff(t, wp, with(next, "csrf", ""), nil), http.StatusForbidden, string(signin.CodeCSRFInvalid))
		refused(t, "a write-off signed out", e.browser(t).writeOff(t, wp, next, w.sameSite()), http.StatusUnauthorized, string(signin.CodeNotSignedIn))

		refused(t, "a callback without a sign-in", e.browser(t).do(t, http.MethodGet, signin.CallbackPath+"?code=c&state=s", nil, nil),
			http.StatusBadRequest, string(signin.CodeStateInvalid))
		bad := e.browser(t)
		atIssuer := bad.follow(t, bad.do(t, http.MethodGet, path, nil, nil), func(u *url.URL) {
			if q := u.Query(); q.Get("nonce") != "" {
				q.Set("nonce", q.Get("nonce")+"x")
				u.RawQuery = q.Encode()
			}
		})
		refused(t, "a bad nonce", bad.signIn(t, atIssuer, person("bruno", mfa), nil), http.StatusBadRequest, string(signin.CodeSigninFailed))
		to := stepUpTo(t, b.decide(t, p, "approve"), a.ID)
		refused(t, "a step-up not met", b.signIn(t, b.follow(t, b.do(t, http.MethodGet, to.String(), nil, nil), nil), person("bruno", "urn:password"), nil),
			http.StatusForbidden, "insufficient_user_authentication")

		if n := len(refusalEvents(t, db)); n != 0 {
			t.Fatalf("%d refusal events before the minute's write, want them counted first", n)
		}
		e.refusals.Flush(context.Background())
		got := refusalEvents(t, db)
		approve, writeOff, denied := "POST "+web.ApprovalPattern, "POST "+web.WriteOffsPath, string(auditlog.Denied)
		want := []refusalEvent{
			{signin.EventFormRefused, approve, denied, string(signin.CodeCrossOrigin), "", 3},
			{signin.EventFormRefused, approve, denied, string(signin.CodeCSRFInvalid), "", 1},
			{signin.EventFormRefused, approve, denied, string(signin.CodeNotSignedIn), "", 1},
			{signin.EventFormRefused, writeOff, denied, string(signin.CodeCrossOrigin), "", 1},
			{signin.EventFormRefused, writeOff, denied, string(signin.CodeCSRFInvalid), "", 1},
			{signin.EventFormRefused, writeOff, denied, string(signin.CodeNotSignedIn), "", 1},
			{signin.EventSigninRefused, "", denied, string(signin.CodeStateInvalid), "", 1},
			{signin.EventSigninRefused, "", denied, string(signin.CodeSigninFailed), "", 1},
			{signin.EventSigninRefused, "", denied, "insufficient_user_authentication", "", 1},
		}
		if len(got) != len(want) {
			t.Fatalf("refusal events %+v, want %+v", got, want)
		}
		client := got[0].client
		for i := range want {
			if got[i].client == "" || got[i].client != client {
				t.Errorf("event %d names client %q, want the one loopback client's digest %q", i, got[i].client, client)
			}
			got[i].client = ""
			if got[i] != want[i] {
				t.Errorf("refusal event %d = %+v, want %+v", i, got[i], want[i])
			}
		}
	})
}
