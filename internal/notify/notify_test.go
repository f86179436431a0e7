package notify_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/cobranca/cobranca/internal/approval"
	"github.com/cobranca/cobranca/internal/clocktest"
	"github.com/cobranca/cobranca/internal/notify"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/outbox/outboxtest"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/smtptest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

var secret = []byte("0123456789abcdef0123456789abcdef-webhook")

// approvers are the addresses told by e-mail in the tests.
var approvers = []string{"ana@financeiro.test", "rui@financeiro.test"}

// customerData is what a preview of a reminder or a write-off holds, and no notification may:
// names, an address, a CPF, amounts, invoice ids, a customer's e-mail.
var customerData = []string{
	"Maria Aparecida da Silva", "Padaria Pão Quente", "Rua das Flores, 123", "01310-100", "123.456.789-09",
	"R$ 98.765,43", "NF-2026-000042", "INV-7781", "maria@cliente.example",
}

// preview is a preview full of customer data.
var preview = "Send a reminder to " + strings.Join(customerData, "; ")

// receiver is an httptest webhook that records every post whose signature verifies, and
// answers with the statuses queued in replies (then 200).
type receiver struct {
	*httptest.Server
	mu      sync.Mutex
	posts   []notify.Payload
	bad     []string // posts whose signature did not verify
	replies []int
}

func newReceiver(t *testing.T, replies ...int) *receiver {
	r := &receiver{replies: replies}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.replies) > 0 {
			code := r.replies[0]
			r.replies = r.replies[1:]
			w.WriteHeader(code)
			return
		}
		if err := notify.Verify(secret, req.Header.Get(notify.TimestampHeader), req.Header.Get(notify.SignatureHeader), body, time.Now(), 5*time.Minute); err != nil {
			r.bad = append(r.bad, err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var p notify.Payload
		if err := json.Unmarshal(body, &p); err != nil || req.Header.Get("Content-Type") != "application/json" {
			r.bad = append(r.bad, fmt.Sprintf("body %q: %v", body, err))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		r.posts = append(r.posts, p)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) got() (posts []notify.Payload, bad []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Payload(nil), r.posts...), append([]string(nil), r.bad...)
}

// replica is one server process's share: its store handle, approvals and outbox.
type replica struct {
	db        store.DB
	approvals *approval.Store
	n         *notify.Notifier
	o         *outbox.Outbox
	hook      approval.Hook
}

// newReplica runs a replica on db whose approvals live an hour on the clock now (nil: the
// real one), telling the approvers through mail and hook with cfg.
func newReplica(t *testing.T, db store.DB, mail *smtptest.Server, hook string, now func() time.Time, cfg notify.Config) *replica {
	t.Helper()
	approvals, err := approval.New(time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	cfg.DB, cfg.Approvals, cfg.PublicURL, cfg.Emails = db, approvals, "https://cobranca.test", approvers
	cfg.WebhookURL, cfg.WebhookSecret = hook, secret
	n, err := notify.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o := outboxtest.Deliver(t, db, mail, outbox.Config{Jobs: n.Jobs()})
	r := &replica{db: db, approvals: approvals, n: n, o: o, hook: n.Hook(o)}
	approvals.OnCreate(r.hook)
	return r
}

// create records a pending approval of a critical call, through the replica.
func (r *replica) create(t *testing.T, i int) *approval.Action {
	t.Helper()
	a, err := r.approvals.Create(context.Background(), r.db, "collections.send_reminder", sha256.Sum256([]byte{byte(i), byte(i >> 8)}), preview,
		[]string{"sends an e-mail to the customer"}, approval.Requester{Subject: "alice@financeiro.test", Client: "claude-desktop", Actor: "agent-7"})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// settle waits until River has nothing left to do: every job completed or given up, and
// returns how many jobs of each kind it holds.
func settle(t *testing.T, db store.DB) map[string]int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var open int64
		if err := db.QueryRow(context.Background(), `SELECT count(*) FROM river_job WHERE state NOT IN ('completed', 'cancelled', 'discarded')`).Scan(&open); err != nil {
			t.Fatal(err)
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("River still has %d jobs to do after 30s", open)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rows, err := db.Query(context.Background(), `SELECT kind, state, count(*) FROM river_job GROUP BY kind, state`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	kinds := map[string]int{}
	for rows.Next() {
		var kind, state string
		var n int
		if err := rows.Scan(&kind, &state, &n); err != nil {
			t.Fatal(err)
		}
		kinds[kind+" "+state] += n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return kinds
}

// leaks reports the customer data a notification's text holds: any datum, compared on its
// letters and digits alone (so that one whose punctuation was replaced still counts), and any
// word of five letters or more of one.
func leaks(text string) []string {
	alnum := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return unicode.ToLower(r)
			}
			return -1
		}, s)
	}
	flat := alnum(text)
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) }) {
		words[w] = true
	}
	var found []string
	for _, s := range customerData {
		if strings.Contains(flat, alnum(s)) {
			found = append(found, s)
			continue
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) }) {
			if len([]rune(w)) >= 5 && words[w] {
				found = append(found, s+" ("+w+")")
			}
		}
	}
	return found
}

// TestReplicas: three replicas on one PostgreSQL, each with its own River client, create
// approvals in turn, and each of them asks again to notify every approval (a retry, a
// replica's double): each approver gets exactly one e-mail per approval and the webhook
// exactly one post, signed, and none of them holds a word of the preview's customer data — in
// each language.
func TestReplicas(t *testing.T) {
	for _, lang := range []notify.Language{notify.English, notify.Portuguese} {
		t.Run(string(lang), func(t *testing.T) { testReplicas(t, lang) })
	}
}

func testReplicas(t *testing.T, lang notify.Language) {
	ctx := context.Background()
	ownerURL := storetest.MigratedPostgres(t, pg)
	login, password := "cobranca_test_notify_"+pgtest.RandomName(), pgtest.RandomName()
	pg.Exec(t, "CREATE ROLE "+login+" LOGIN PASSWORD '"+password+"' IN ROLE cobranca_app")
	t.Cleanup(func() { pg.Exec(t, "DROP ROLE IF EXISTS "+login) })
	appURL := pgtest.WithUser(t, ownerURL, login, password)
	mail := smtptest.New(t)
	hook := newReceiver(t)
	var replicas []*replica
	for range 3 {
		db, err := postgres.Open(ctx, appURL, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		replicas = append(replicas, newReplica(t, db, mail, hook.URL, nil, notify.Config{Language: lang}))
	}
	const approvals = 6
	var created []*approval.Action
	for i := range approvals {
		created = append(created, replicas[i%3].create(t, i))
	}
	// Every replica asks again for every approval: River's unique jobs keep one of each.
	for _, r := range replicas {
		for _, a := range created {
			if err := r.db.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return r.hook(ctx, tx, a) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	kinds := settle(t, replicas[0].db)
	want := map[string]int{"cobranca.email completed": approvals * len(approvers), "cobranca.approval_webhook completed": approvals}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("River's jobs = %v, want %d %s", kinds, n, k)
		}
	}
	msgs := mail.Messages()
	if len(msgs) != approvals*len(approvers) {
		t.Errorf("%d e-mails received, want %d", len(msgs), approvals*len(approvers))
	}
	perApproval := map[string]int{}
	for _, m := range msgs {
		for _, a := range created {
			if strings.Contains(m.Subject, a.ID) && strings.Contains(m.Body, "https://cobranca.test/approvals/"+a.ID) {
				perApproval[a.ID+" "+m.To[0]]++
			}
		}
		if l := leaks(m.Subject + "\n" + m.Body + "\n" + string(m.Raw)); len(l) > 0 {
			t.Errorf("e-mail %q holds customer data %q", m.Subject, l)
		}
	}
	posts, bad := hook.got()
	if len(bad) > 0 {
		t.Errorf("posts refused by the receiver: %q", bad)
	}
	if len(posts) != approvals {
		t.Errorf("%d webhook posts, want %d", len(posts), approvals)
	}
	for _, p := range posts {
		for _, a := range created {
			if strings.Contains(p.Text, "https://cobranca.test/approvals/"+a.ID) {
				perApproval[a.ID+" webhook"]++
			}
		}
		if l := leaks(p.Text); len(l) > 0 {
			t.Errorf("post %q holds customer data %q", p.Text, l)
		}
	}
	for _, a := range created {
		for _, to := range append(approvers, "webhook") {
			if n := perApproval[a.ID+" "+to]; n != 1 {
				t.Errorf("approval %s: %s told %d times, want once", a.ID, to, n)
			}
		}
	}
}

// TestDigest: past the first DigestAfter approvals of a window, the others are told in one
// digest at the window's end — one e-mail per approver and one post, saying how many — on
// either store, in the default language, Portuguese.
func TestDigest(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		// The last window that has ended: its digest is due at once.
		start := time.Now().Truncate(10 * time.Minute).Add(-10 * time.Minute)
		clock := &clocktest.Clock{}
		clock.Advance(time.Until(start.Add(time.Second)))
		mail := smtptest.New(t)
		hook := newReceiver(t)
		r := newReplica(t, db, mail, hook.URL, clock.Now, notify.Config{DigestAfter: 2, DigestWindow: 10 * time.Minute})
		for i := range 5 {
			r.create(t, i)
			clock.Advance(time.Minute)
		}
		clock.Advance(10 * time.Minute) // the next window: told on its own again
		last := r.create(t, 99)
		kinds := settle(t, db)
		want := map[string]int{
			"cobranca.email completed":            4 * len(approvers), // 3 approvals + a digest
			"cobranca.approval_webhook completed": 4,
			"cobranca.approval_digest completed":  1,
		}
		for k, n := range want {
			if kinds[k] != n {
				t.Errorf("River's jobs = %v, want %d %s", kinds, n, k)
			}
		}
		posts, bad := hook.got()
		var digests []string
		for _, p := range posts {
			if strings.HasPrefix(p.Text, "Mais ") {
				digests = append(digests, p.Text)
			}
		}
		if len(digests) != 1 || !strings.HasPrefix(digests[0], "Mais 3 aprovações foram pedidas de "+stamp(start)+" a "+stamp(start.Add(10*time.Minute))+" (além das 2 primeiras, avisadas uma a uma)") ||
			!strings.HasSuffix(digests[0], "Abrir as aprovações: https://cobranca.test/console") {
			t.Errorf("digest posts = %q, want one telling 3 more, linking the inbox", digests)
		}
		if len(bad) > 0 {
			t.Errorf("posts refused: %q", bad)
		}
		var digestMail, lastMail int
		for _, m := range mail.Messages() {
			if m.Subject == "[cobranca] Mais 3 aprovações pedidas" {
				digestMail++
			}
			if strings.Contains(m.Subject, last.ID) {
				lastMail++
			}
		}
		if digestMail != len(approvers) || lastMail != len(approvers) {
			t.Errorf("digest e-mails %d, the next window's approval's %d; want %d each", digestMail, lastMail, len(approvers))
		}
	})
}

// stamp is t as the Portuguese notifications write it.
func stamp(t time.Time) string {
	return t.In(time.FixedZone("BRT", -3*3600)).Format("02/01/2006 15:04") + " (horário de Brasília)"
}

// TestWebhookRetried: a receiver that fails (503) gets the post
// again until it takes it, once; the approval was recorded whatever the webhook does. One
// that refuses for good (400) is not asked again.
func TestWebhookRetried(t *testing.T) {
	t.Run("transient", func(t *testing.T) {
		db := storetest.SQLite(t)
		hook := newReceiver(t, http.StatusServiceUnavailable)
		r := newReplica(t, db, smtptest.New(t), hook.URL, nil, notify.Config{})
		a := r.create(t, 1)
		if got, err := r.approvals.Get(context.Background(), db, a.ID); err != nil || got.State != approval.Pending {
			t.Fatalf("the approval = %v, %v; want it pending at once", got, err)
		}
		kinds := settle(t, db)
		posts, _ := hook.got()
		if len(posts) != 1 || kinds["cobranca.approval_webhook completed"] != 1 {
			t.Errorf("posts %q, jobs %v; want one post, delivered on its second attempt", posts, kinds)
		}
	})
	t.Run("permanent", func(t *testing.T) {
		db := storetest.SQLite(t)
		hook := newReceiver(t, http.StatusBadRequest)
		r := newReplica(t, db, smtptest.New(t), hook.URL, nil, notify.Config{})
		r.create(t, 1)
		kinds := settle(t, db)
		if kinds["cobranca.approval_webhook cancelled"] != 1 || kinds["cobranca.email completed"] != len(approvers) {
			t.Errorf("jobs %v; want the post given up after a 400, the e-mails sent", kinds)
		}
		if posts, _ := hook.got(); len(posts) != 0 {
			t.Errorf("posts %q after a 400, want none", posts)
		}
	})
}
