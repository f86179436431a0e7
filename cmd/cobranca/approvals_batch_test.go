package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/calendar"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/schedules"
	"github.com/cobranca/cobranca/internal/store"
)

// TestApprovalsDecideBatch: `cobranca approvals approve`, deciding in its own process, runs the
// server's decide hook: approving a schedule's batch queues its send job (for the serving
// replicas' River clients), in the decision's transaction; rejecting one, or approving another
// client's call, queues none.
func TestApprovalsDecideBatch(t *testing.T) {
	eachStore(t, func(t *testing.T, db []string) {
		environ := append([]string{"COBRANCA_DATA_DIR=" + t.TempDir()}, db...)
		ctx := context.Background()
		cli := func(stdin string, args ...string) (string, error) {
			t.Helper()
			var out, errOut bytes.Buffer
			err := run(ctx, args, environ, strings.NewReader(stdin), &out, &errOut)
			return out.String() + errOut.String(), err
		}
		if out, err := cli("", "migrate"); err != nil {
			t.Fatalf("migrate = %q, %v", out, err)
		}
		cfg, err := config.Load(environ)
		if err != nil {
			t.Fatal(err)
		}
		st, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		var sp schedules.Spec
		if err := json.Unmarshal(fmt.Appendf(nil, `{"name":"Régua","steps":[{"offset":3,"tone":"friendly"}],"audience":{"all":true},"endDate":%q}`,
			calendar.DateOf(time.Now(), time.UTC).AddDays(30).String()), &sp); err != nil {
			t.Fatal(err)
		}
		s, fe := sp.Validate(func(loc *time.Location) calendar.Date { return calendar.DateOf(time.Now(), loc) })
		if fe != nil {
			t.Fatal(fe)
		}
		err = st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			s, err = schedules.Create(ctx, tx, s, schedules.Stamp{By: "ana"}, time.Now())
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		approvals, err := approval.New(cfg.ApprovalTTL, nil)
		if err != nil {
			t.Fatal(err)
		}
		ask := func(what string, client string) *approval.Action {
			t.Helper()
			x, err := approvals.Create(ctx, st, collections.BulkSendName, sha256.Sum256([]byte(what)), what, nil,
				approval.Requester{Subject: "ana", Client: client, Actor: s.ID})
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
		batch, rejected, other := ask("a batch", collections.BatchClient), ask("another batch", collections.BatchClient), ask("an agent's call", "ledger-copilot")
		token, err := cli("", "token", "--sub", "bruno", "--acr", "urn:mfa", "--role", collections.ApproverRole)
		if err != nil {
			t.Fatalf("token = %q, %v", token, err)
		}
		for _, d := range []struct {
			verb string
			x    *approval.Action
		}{{"reject", rejected}, {"approve", other}, {"approve", batch}} {
			if out, err := cli(token, "approvals", d.verb, d.x.ID, "--token", "-"); err != nil {
				t.Fatalf("approvals %s %s (%s) = %q, %v", d.verb, d.x.ID, d.x.Preview, out, err)
			}
		}
		args := `CAST(args AS text)`
		if st.Dialect() == store.SQLite {
			args = `json(args)` // River's SQLite driver stores JSONB
		}
		rows, err := st.Query(ctx, `SELECT `+args+` FROM river_job WHERE kind = 'cobranca.schedule_batch_send'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var got []collections.SendArgs
		for rows.Next() {
			var raw string
			var a collections.SendArgs
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(raw), &a); err != nil {
				t.Fatal(err)
			}
			got = append(got, a)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].ApprovalID != batch.ID {
			t.Errorf("send jobs %+v; want one, for the approved batch %s", got, batch.ID)
		}
	})
}
