package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/auth/authtest"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/reminders/reminderstest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/tier"
)

// Sizes of TestReplicas: the write budget every principal has, all replicas together, and the
// two bulk sends. A bulk send's three calls (dry run, approval asked, approved retry) spend one
// unit per 50 drafts each: 18 units for the second, sent by a client of its own.
const (
	replicaWriteBudget = 24
	firstBulk          = 60
	killedReplicaBulk  = 300
	replicaMailWorkers = 4
)

// replicaSet is three `cobranca serve` processes on one PostgreSQL database, as a deployment
// behind a load balancer runs them: the same issuer (its JWKS), audit key, request-state and
// link keys, public URL and SMTP relay; each its own port and data directory.
type replicaSet struct {
	t        *testing.T
	idp      *authtest.Issuer
	environ  [3][]string // each replica's
	addrs    [3]string
	procs    [3]*serveProcess
	public   string // COBRANCA_PUBLIC_URL: the load balancer's, which approval links name
	mail     *smtptest.Server
	db       store.DB
	messages int // sent so far, as the test counts them
}

func secret(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// startReplicas starts the three replicas; each of overrides, "NAME=value", replaces that
// variable's value in their shared environment (or adds it).
func startReplicas(t *testing.T, overrides ...string) *replicaSet {
	t.Helper()
	cluster := pgtest.New()
	t.Cleanup(cluster.Close)
	const resource = "http://cobranca.test/mcp"
	r := &replicaSet{t: t, idp: authtest.NewIssuer(t, resource), public: "http://cobranca.test",
		// Each DATA takes 20 ms, as a nearby relay's: the kill finds messages in flight.
		mail: smtptest.Start(t, smtptest.Options{Latency: 20 * time.Millisecond})}
	keys := t.TempDir()
	shared := []string{"COBRANCA_DATABASE_URL=" + cluster.Database(t), "COBRANCA_METRICS_ADDR=off", "COBRANCA_LOG_LEVEL=warn",
		"COBRANCA_ISSUER=" + r.idp.URL, "COBRANCA_JWKS_URL=" + r.idp.JWKSURL, "COBRANCA_RESOURCE=" + resource,
		"COBRANCA_STEPUP_ACR=" + strongACR, "COBRANCA_PUBLIC_URL=" + r.public,
		"COBRANCA_AUDIT_KEY=" + secret(t), "COBRANCA_AUDIT_SIGNING_KEY=" + filepath.Join(keys, "audit-signing.pem"),
		"COBRANCA_REQUEST_STATE_KEYS=s1:" + secret(t), "COBRANCA_LINK_KEYS=l1:" + secret(t),
		"COBRANCA_SMTP_URL=" + r.mail.URL(), "COBRANCA_MAIL_FROM=" + mailFrom, "COBRANCA_MAIL_WORKERS=4",
		// A message taken by a killed replica is sent again 2 s later, not an hour.
		"COBRANCA_MAIL_RESCUE_AFTER=2s",
		"COBRANCA_REPLICAS=3", fmt.Sprintf("COBRANCA_RATE_WRITE=%d/1h,burst=%[1]d", replicaWriteBudget),
		// On a loaded machine the store can take longer than 200 ms to answer the limiter,
		// which then fails writes closed (unavailable): this test is about the budget's sum.
		"COBRANCA_RATE_STORE_TIMEOUT=5s"}
	for _, o := range overrides {
		name, _, _ := strings.Cut(o, "=")
		shared = slices.DeleteFunc(shared, func(v string) bool { return strings.HasPrefix(v, name+"=") })
		shared = append(shared, o)
	}
	for i := range r.environ {
		r.addrs[i] = freeAddr(t)
		r.environ[i] = append([]string{"COBRANCA_DATA_DIR=" + t.TempDir(), "COBRANCA_ADDR=" + r.addrs[i]}, shared...)
	}
	r.db = migratedStore(t, r.environ[0])
	// Replica 0 starts first and leads River's maintenance (the rescue of lost messages among
	// it) before the others start: the replica killed later is the leader.
	r.procs[0] = startServeProcess(t, r.environ[0], r.addrs[0])
	for deadline := time.Now().Add(30 * time.Second); r.leader() == ""; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("replica 0 was not elected River's leader")
		}
	}
	for i := 1; i < 3; i++ {
		r.procs[i] = startServeProcess(t, r.environ[i], r.addrs[i])
	}
	return r
}

// leader is the client id of River's leader, or "".
func (r *replicaSet) leader() string {
	var id string
	_ = r.db.QueryRow(r.t.Context(), `SELECT leader_id FROM river_leader`).Scan(&id)
	return id
}

// token mints an access token: an agent's acting for subject when agent is set.
func (r *replicaSet) token(subject, agent string, scopes ...string) string {
	return r.idp.Mint(r.t, auth.MintOptions{Subject: subject, Agent: agent, Scopes: scopes})
}

// call calls tool on sess and fails the test on a protocol error.
func call(t *testing.T, sess *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := sess.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// fields is a complete result's structured content, failing the test on anything else.
func fields(t *testing.T, what string, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	m, ok := res.StructuredContent.(map[string]any)
	if res.IsError || res.NeedsInput() || !ok {
		t.Fatalf("%s = %s %+v, want a result", what, resultText(res), res)
	}
	return m
}

// TestReplicas runs three `cobranca serve` processes on one PostgreSQL database and drives each
// step of the collections work through a different one, as a load balancer would spread it:
// analyze_portfolio; prepare_reminder, replayed on another replica (the same draft, no second);
// a write budget of 24 spent unevenly over the three, the 25th call refused wherever it lands;
// set_contact_status's confirmation asked by one replica and answered on another (the shared
// request-state keys), replayed on a third; send_reminder's approval asked by one, given by a
// person through `cobranca approvals approve`, the retry on another and its replay on a third;
// a bulk send of 60, replayed on another replica. Every message arrives exactly once, under the
// Message-ID its entry names. Then a bulk send of 300, during which the replica leading River's
// maintenance is killed (SIGKILL): the other two deliver every message — those the dead one had
// taken are rescued and sent again under their first Message-ID, so the only copies are of
// messages it was sending when it died — and `cobranca audit verify` passes on the whole chain.
func TestReplicas(t *testing.T) {
	tier.EndToEnd(t)
	start := time.Now()
	r := startReplicas(t)
	started := time.Since(start)
	reader := r.token("carla", "", "collections:read")
	alice := r.token("alice", "collector-bot", "reminders:write", "reminders:send", "collections:read", "customers:write")
	approver := r.idp.Mint(t, auth.MintOptions{Subject: "bruno", ACR: strongACR, Roles: []string{collections.ApproverRole}})

	step(t, "analyze_portfolio: one answer on every replica", func() {
		var portfolio map[string]any
		if err := json.Unmarshal([]byte(variantsPortfolio), &portfolio); err != nil {
			t.Fatal(err)
		}
		var first map[string]any
		for i, addr := range r.addrs {
			got := fields(t, "analyze_portfolio", call(t, connect(t, addr, reader, nil), collections.AnalyzeName, portfolio))
			if i == 0 {
				first = got
			} else if !reflect.DeepEqual(got, first) {
				t.Errorf("analyze_portfolio on replica %d = %v, replica 0 = %v", i, got, first)
			}
		}
	})

	var draft string
	step(t, "prepare_reminder on replica 1, replayed on replica 2", func() {
		draft = prepare(t, connect(t, r.addrs[1], alice, nil), "c-1", "ana@cliente.example", "prepare-1")
		if again := prepare(t, connect(t, r.addrs[2], alice, nil), "c-1", "ana@cliente.example", "prepare-1"); again != draft {
			t.Errorf("the replay on replica 2 answered draft %s, replica 1 %s", again, draft)
		}
		if n := r.count(`SELECT count(*) FROM reminder_draft WHERE customer_id = 'c-1'`); n != 1 {
			t.Errorf("%d drafts for c-1, want the one", n)
		}
	})

	var doraDraft string
	step(t, "the write budget is one budget for the three replicas", func() {
		dora := r.token("dora", "limits-bot", "reminders:write")
		sessions := [3]*mcp.ClientSession{}
		for i, addr := range r.addrs {
			sessions[i] = connect(t, addr, dora, nil)
		}
		// Half the budget's calls on replica 0, a third on replica 1, the rest on replica 2,
		// each a repeat of the first after it (repeats spend the budget too).
		for i := range replicaWriteBudget {
			replica := 0
			switch {
			case i >= replicaWriteBudget*5/6:
				replica = 2
			case i >= replicaWriteBudget/2:
				replica = 1
			}
			res, err := sessions[replica].CallTool(t.Context(), &mcp.CallToolParams{Name: collections.PrepareReminderName,
				Arguments: prepareArgs("c-dora", "dora@cliente.example", "dora-1")})
			got := draftOf(t, res, err)
			if i == 0 {
				doraDraft = got
			} else if got != doraDraft {
				t.Fatalf("call %d on replica %d answered draft %s, the first %s", i+1, replica, got, doraDraft)
			}
		}
		for _, replica := range []int{2, 1, 0} {
			res := call(t, sessions[replica], collections.PrepareReminderName, prepareArgs("c-dora", "dora@cliente.example", "dora-1"))
			if !res.IsError || toolError(t, res).Code != failure.RateLimited {
				t.Errorf("call %d of a budget of %d, on replica %d = %s, want rate_limited", replicaWriteBudget+1, replicaWriteBudget, replica, resultText(res))
			}
		}
	})

	step(t, "set_contact_status: confirmation asked on replica 2, answered on replica 0, replayed on replica 1", func() {
		manual := func(addr string) *mcp.ClientSession {
			return connect(t, addr, alice, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					t.Error("the client was asked to elicit: the test answers the confirmation itself")
					return &mcp.ElicitResult{Action: "decline"}, nil
				}})
		}
		args := map[string]any{"customerId": "c-dora", "status": "do_not_contact", "reason": "asked not to be contacted again", "idempotencyKey": "stop-1"}
		asked := call(t, manual(r.addrs[2]), collections.SetContactStatusName, args)
		if !asked.NeedsInput() || len(asked.InputRequests) != 1 || asked.RequestState == "" {
			t.Fatalf("set_contact_status = %s %+v, want a confirmation request", resultText(asked), asked)
		}
		responses := mcp.InputResponseMap{}
		for id, in := range asked.InputRequests {
			if p, ok := in.(*mcp.ElicitParams); !ok || !strings.Contains(p.Message, "do_not_contact") && !strings.Contains(p.Message, "not be contacted") {
				t.Errorf("the confirmation asks %+v, want the change shown", in)
			}
			responses[id] = &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirm": true}}
		}
		res, err := manual(r.addrs[0]).CallTool(t.Context(), &mcp.CallToolParams{Name: collections.SetContactStatusName, Arguments: args,
			InputResponses: responses, RequestState: asked.RequestState})
		if err != nil {
			t.Fatal(err)
		}
		set := fields(t, "set_contact_status confirmed on replica 0", res)
		if set["changed"] != true || set["status"] != "do_not_contact" || set["draftsDiscarded"] != 1.0 {
			t.Errorf("set_contact_status = %v, want changed to do_not_contact with dora's draft discarded", set)
		}
		if again := fields(t, "the replay on replica 1", call(t, manual(r.addrs[1]), collections.SetContactStatusName, args)); !reflect.DeepEqual(again, set) {
			t.Errorf("the replay on replica 1 = %v, want the first answer %v", again, set)
		}
		if n := r.count(`SELECT count(*) FROM reminder_draft WHERE customer_id = 'c-dora' AND state = 'discarded'`); n != 1 {
			t.Errorf("%d of dora's drafts discarded, want 1", n)
		}
	})

	step(t, "send_reminder: approval asked on replica 0, the retry on replica 1, the replay on replica 2", func() {
		send := map[string]any{"draftId": draft, "idempotencyKey": "send-1"}
		res := call(t, connectVersion(t, r.addrs[0], alice, "2025-11-25", nil), collections.SendReminderName, send)
		if !res.IsError || toolError(t, res).Code != failure.ApprovalRequired {
			t.Fatalf("send_reminder = %s, want approval_required", resultText(res))
		}
		m := regexp.MustCompile(regexp.QuoteMeta(r.public) + `/approvals/(a_[A-Za-z0-9_-]+)`).FindStringSubmatch(toolError(t, res).Message)
		if m == nil {
			t.Fatalf("approval_required's message %q names no approval at %s", toolError(t, res).Message, r.public)
		}
		mustRunIn(t, r.environ[2], approver, "approvals", "approve", m[1], "--token", "-")
		queued := call(t, connectVersion(t, r.addrs[1], alice, "2025-11-25", nil), collections.SendReminderName, send)
		got := fields(t, "send_reminder's retry on replica 1", queued)
		if got["state"] != "queued" || got["to"] != "ana@cliente.example" {
			t.Fatalf("send_reminder's retry = %v, want queued", got)
		}
		if again := call(t, connectVersion(t, r.addrs[2], alice, "2025-11-25", nil), collections.SendReminderName, send); !sameResult(again, queued) {
			t.Errorf("the replay on replica 2 = %s, want the first answer %s", resultText(again), resultText(queued))
		}
		r.messages++
		r.mail.Wait(t, r.messages, 30*time.Second)
	})

	bulkAgent := r.token("alice", "bulk-bot", "reminders:send", "collections:read")
	step(t, "a bulk send of 60 through replica 1, approved, replayed on replica 0", func() {
		reminderstest.Bulk(t, r.db, firstBulk)
		b := bulk{environ: r.environ[2], addr: r.addrs[1], base: r.public, agent: bulkAgent, approver: approver, key: "bulk-1"}
		sent, args := b.send(t, firstBulk)
		id := sent["bulkId"].(string)
		reminderstest.WaitSent(t, r.db, r.messages+firstBulk, 60*time.Second)
		r.messages += firstBulk
		if p := bulkProgress(t, r.addrs[2], reader, id); p["sent"] != float64(firstBulk) || p["done"] != true {
			t.Errorf("get_bulk_send on replica 2 = %v, want all %d sent", p, firstBulk)
		}
		// The same key and plan on replica 0: the stored answer, without an approval, and
		// nothing queued again (checkDelivered).
		again := fields(t, "the replay on replica 0", call(t, connect(t, r.addrs[0], bulkAgent, nil), collections.BulkSendName, args))
		if !reflect.DeepEqual(again, sent) {
			t.Errorf("the replay on replica 0 = %v, want the first answer %v", again, sent)
		}
	})
	time.Sleep(200 * time.Millisecond) // a second copy would have come by now
	r.checkDelivered(t, 0)

	step(t, "a bulk send of 300 through replica 1; replica 0, River's leader, killed while it delivers", func() {
		drafts := reminderstest.Bulk(t, r.db, killedReplicaBulk)
		leader := r.leader()
		// A client of its own: the first bulk send spent 8 units of bulk-bot's budget.
		agent := r.token("alice", "bulk-bot-2", "reminders:send", "collections:read")
		b := bulk{environ: r.environ[2], addr: r.addrs[1], base: r.public, agent: agent, approver: approver, key: "bulk-2"}
		sent, _ := b.send(t, len(drafts))
		id := sent["bulkId"].(string)
		// Killed once a quarter is delivered, while it has messages in hand: frozen (SIGSTOP)
		// until what it had sent to the store has landed, then, holding some, killed.
		r.mail.Wait(t, r.messages+killedReplicaBulk/4, 60*time.Second)
		var inHand int
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if err := r.procs[0].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if inHand = r.runningOn(leader); inHand > 0 {
				break
			}
			if err := r.procs[0].cmd.Process.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatal("replica 0 never held a message of the bulk")
			}
		}
		r.procs[0].kill()
		killedAt := len(r.mail.Messages())
		if killedAt >= r.messages+killedReplicaBulk {
			t.Fatalf("all messages were accepted at the kill: the bulk was no longer being delivered")
		}
		reminderstest.WaitSent(t, r.db, r.messages+killedReplicaBulk, 60*time.Second)
		r.messages += killedReplicaBulk
		if p := bulkProgress(t, r.addrs[2], reader, id); p["sent"] != float64(killedReplicaBulk) || p["done"] != true || p["failed"] != 0.0 {
			t.Errorf("get_bulk_send on replica 2 = %v, want all %d sent", p, killedReplicaBulk)
		}
		resent := r.resentFrom(leader)
		copies := r.checkDelivered(t, inHand)
		if resent != inHand {
			t.Errorf("%d messages sent again, want those replica 0 held when it died (%d)", resent, inHand)
		}
		t.Logf("killed with %d messages received, %d in replica 0's hands: %d rescued and sent again, %d received twice", killedAt, inHand, resent, copies)
	})

	step(t, "audit verify", func() {
		out := mustRun(t, r.environ[1], "audit", "verify")
		if !strings.HasPrefix(out, "OK ") {
			t.Errorf("audit verify = %q, want OK", out)
		}
	})
	t.Logf("three replicas started in %v; the whole test %v", started.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// count runs a count query on the store.
func (r *replicaSet) count(query string, args ...any) int {
	r.t.Helper()
	var n int
	if err := r.db.QueryRow(r.t.Context(), query, args...).Scan(&n); err != nil {
		r.t.Fatal(err)
	}
	return n
}

// runningOn counts the outbox entries client (a replica's River client id) is sending.
func (r *replicaSet) runningOn(client string) int {
	return r.count(`SELECT count(*) FROM river_job WHERE state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $1`, client)
}

// resentFrom counts the entries client took and another replica sent again.
func (r *replicaSet) resentFrom(client string) int {
	return r.count(`SELECT count(*) FROM river_job WHERE $1 = ANY(attempted_by) AND attempt > 1`, client)
}

// checkDelivered checks what the relay received against the outbox: every entry's message, under
// its Message-ID, to its recipient; copies only of entries sent more than once (rescued), at most
// maxCopies. It returns the number of copies.
func (r *replicaSet) checkDelivered(t *testing.T, maxCopies int) int {
	t.Helper()
	want := map[string]string{}  // Message-ID → recipient
	rescued := map[string]bool{} // the Message-IDs of entries sent more than once
	for _, e := range outboxtest.Entries(t, r.db) {
		want[e.MessageID(mailFrom)] = e.Args.To
		rescued[e.MessageID(mailFrom)] = e.Attempt > 1
	}
	got := r.mail.Messages()
	seen := map[string]int{}
	for _, m := range got {
		to, ok := want[m.MessageID]
		if !ok || len(m.To) != 1 || m.To[0] != to {
			t.Fatalf("received a message to %q under %s, which no entry has for that recipient", m.To, m.MessageID)
		}
		seen[m.MessageID]++
		if seen[m.MessageID] > 1 && !rescued[m.MessageID] {
			t.Errorf("%s arrived %d times, and its entry was sent once", m.MessageID, seen[m.MessageID])
		}
	}
	if len(seen) != len(want) || len(want) != r.messages {
		t.Errorf("received %d distinct messages, the outbox has %d entries, want every one of the %d sent", len(seen), len(want), r.messages)
	}
	copies := len(got) - len(seen)
	if copies > maxCopies {
		t.Errorf("%d copies received, want at most %d", copies, maxCopies)
	}
	return copies
}
