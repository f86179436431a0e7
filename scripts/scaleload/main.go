// Command scaleload drives the write workloads of scripts/scale.sh against several cobranca
// replicas sharing one PostgreSQL, as a real MCP client (go-sdk) over HTTP, and is the mail
// server their outbox delivers to. It is an instrument, not part of the product.
//
//	scaleload sink    -smtp 127.0.0.1:2525 -http 127.0.0.1:2526
//	scaleload prepare -urls URL1,URL2,URL3 -token-file T -n 3000 -c 8 -prefix o1 -out drafts.txt
//	scaleload run     -urls URL1,URL2,URL3 -token-file T -d 20s -medium 8 \
//	                  [-drafts drafts.txt -bulk 200 -bulk-c 2 -approver-token-file P -cobranca BIN -sink http://127.0.0.1:2526]
//
// sink accepts every message (any sender, any recipient, no TLS) and counts them; GET /count
// on its HTTP address answers the count so far.
//
// prepare writes n reminder drafts with collections.prepare_reminder, each for a customer of
// its own, and writes their ids to -out, one a line: the drafts the outbox workload sends.
//
// run drives, for -d, the medium workload — -medium workers each calling prepare_reminder in
// a closed loop for a new customer with a fresh idempotency key, round-robin over the replicas —
// and, with -drafts, the outbox workload: -bulk-c senders each taking the next -bulk drafts of
// the file and sending them with collections.bulk_send_reminders (the dry run, the call that
// asks for a person's approval, `cobranca approvals approve` as that person, the approved
// retry), keeping at most -backlog messages queued but not yet at the sink. Past -d (or the
// drafts' end) it sends no more and waits until the sink has every queued message. It prints
// key=value lines: medium_ok, medium_err, medium_s, outbox_sent, outbox_bulks, outbox_err,
// outbox_s.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "scaleload:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("want a command: sink, prepare or run")
	}
	switch args[0] {
	case "sink":
		o, err := parseSink(args[1:])
		if err != nil {
			return err
		}
		return serveSink(ctx, o)
	case "prepare":
		o, err := parsePrepare(args[1:])
		if err != nil {
			return err
		}
		return prepareDrafts(ctx, o)
	case "run":
		o, err := parseRun(args[1:])
		if err != nil {
			return err
		}
		return drive(ctx, o, stdout)
	}
	return fmt.Errorf("unknown command %q: want sink, prepare or run", args[0])
}

type sinkOptions struct{ smtpAddr, httpAddr string }

func parseSink(args []string) (sinkOptions, error) {
	var o sinkOptions
	fs := flag.NewFlagSet("sink", flag.ContinueOnError)
	fs.StringVar(&o.smtpAddr, "smtp", "127.0.0.1:2525", "SMTP listen address")
	fs.StringVar(&o.httpAddr, "http", "127.0.0.1:2526", "listen address of GET /count")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("sink: unexpected argument %q", fs.Arg(0))
	}
	return o, nil
}

// clientOptions are what prepare and run share: where the replicas are and whose token calls.
type clientOptions struct {
	urls  []string
	token string
}

func (c *clientOptions) register(fs *flag.FlagSet) (urls, tokenFile *string) {
	return fs.String("urls", "", "comma-separated MCP endpoints of the replicas (required)"),
		fs.String("token-file", "", "file holding the agent's access token (required)")
}

func (c *clientOptions) load(urls, tokenFile string) error {
	for u := range strings.SplitSeq(urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.urls = append(c.urls, u)
		}
	}
	if len(c.urls) == 0 {
		return errors.New("-urls: want at least one endpoint")
	}
	if tokenFile == "" {
		return errors.New("-token-file is required")
	}
	tok, err := readToken(tokenFile)
	c.token = tok
	return err
}

func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s: empty", path)
	}
	return tok, nil
}

type prepareOptions struct {
	clientOptions
	n, c   int
	prefix string
	out    string
}

func parsePrepare(args []string) (prepareOptions, error) {
	var o prepareOptions
	fs := flag.NewFlagSet("prepare", flag.ContinueOnError)
	urls, tokenFile := o.register(fs)
	fs.IntVar(&o.n, "n", 1000, "drafts to write")
	fs.IntVar(&o.c, "c", 8, "concurrent callers")
	fs.StringVar(&o.prefix, "prefix", "p", "prefix of the customer ids and idempotency keys (unique per run)")
	fs.StringVar(&o.out, "out", "", "file the draft ids are written to (required)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if err := o.load(*urls, *tokenFile); err != nil {
		return o, err
	}
	switch {
	case o.n < 1:
		return o, errors.New("-n: want at least 1")
	case o.c < 1:
		return o, errors.New("-c: want at least 1")
	case o.out == "":
		return o, errors.New("-out is required")
	}
	return o, nil
}

type runOptions struct {
	clientOptions
	d        time.Duration
	medium   int
	prefix   string
	drafts   string // outbox workload: the file of draft ids; "" for none
	bulk     int
	bulkC    int
	backlog  int
	approver string // the approving person's token
	cobranca string // the binary whose `approvals approve` approves
	sink     string // base URL of the sink's /count
}

func parseRun(args []string) (runOptions, error) {
	var o runOptions
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	urls, tokenFile := o.register(fs)
	fs.DurationVar(&o.d, "d", 20*time.Second, "how long to drive the load")
	fs.IntVar(&o.medium, "medium", 0, "concurrent prepare_reminder callers (0: no medium workload)")
	fs.StringVar(&o.prefix, "prefix", "r", "prefix of the customer ids and idempotency keys (unique per run)")
	fs.StringVar(&o.drafts, "drafts", "", "file of draft ids (scaleload prepare's -out) to send: the outbox workload")
	fs.IntVar(&o.bulk, "bulk", 200, "drafts per bulk send")
	fs.IntVar(&o.bulkC, "bulk-c", 2, "concurrent bulk senders")
	fs.IntVar(&o.backlog, "backlog", 0, "most messages queued but not yet at the sink before a sender waits (0: 2 × -bulk × -bulk-c)")
	approverFile := fs.String("approver-token-file", "", "file holding the approving person's token (with -drafts)")
	fs.StringVar(&o.cobranca, "cobranca", "", "the cobranca binary that approves, in this process's environment (with -drafts)")
	fs.StringVar(&o.sink, "sink", "", "base URL of scaleload sink's HTTP address (with -drafts)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("run: unexpected argument %q", fs.Arg(0))
	}
	if err := o.load(*urls, *tokenFile); err != nil {
		return o, err
	}
	var errs []error
	if o.d <= 0 {
		errs = append(errs, errors.New("-d: want a positive duration"))
	}
	if o.medium < 0 {
		errs = append(errs, errors.New("-medium: want 0 or more"))
	}
	if o.medium == 0 && o.drafts == "" {
		errs = append(errs, errors.New("nothing to drive: give -medium N or -drafts FILE"))
	}
	if o.drafts != "" {
		if o.bulk < 1 || o.bulk > 10000 {
			errs = append(errs, errors.New("-bulk: want 1 to 10000"))
		}
		if o.bulkC < 1 {
			errs = append(errs, errors.New("-bulk-c: want at least 1"))
		}
		if o.cobranca == "" || o.sink == "" || *approverFile == "" {
			errs = append(errs, errors.New("-drafts needs -cobranca, -sink and -approver-token-file"))
		} else {
			tok, err := readToken(*approverFile)
			o.approver = tok
			errs = append(errs, err)
		}
		if o.backlog == 0 {
			o.backlog = 2 * o.bulk * o.bulkC
		}
	}
	return o, errors.Join(errs...)
}

// sink is an SMTP server that accepts every message and counts them.
type sink struct{ n atomic.Int64 }

func (s *sink) NewSession(*smtp.Conn) (smtp.Session, error) { return sinkSession{s}, nil }

type sinkSession struct{ s *sink }

func (sinkSession) Mail(string, *smtp.MailOptions) error { return nil }
func (sinkSession) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (sinkSession) Reset()                               {}
func (sinkSession) Logout() error                        { return nil }
func (ss sinkSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	ss.s.n.Add(1)
	return nil
}

func (s *sink) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, s.n.Load())
}

// serveSink listens on o's addresses and serves a sink there until ctx ends or one fails.
func serveSink(ctx context.Context, o sinkOptions) error {
	sl, err := net.Listen("tcp", o.smtpAddr)
	if err != nil {
		return err
	}
	hl, err := net.Listen("tcp", o.httpAddr)
	if err != nil {
		sl.Close()
		return err
	}
	return (&sink{}).serve(ctx, sl, hl)
}

// serve serves SMTP on sl and GET /count on hl until ctx ends or one of them fails.
func (s *sink) serve(ctx context.Context, sl, hl net.Listener) error {
	srv := smtp.NewServer(s)
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	srv.ErrorLog = log.New(io.Discard, "", 0)
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(sl) }()
	go func() { errc <- hs.Serve(hl) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	}
	srv.Close()
	hs.Close()
	return err
}

// sinkCount reads the sink's count at base.
func sinkCount(ctx context.Context, hc *http.Client, base string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/count", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// sessions are one MCP session per replica, for one caller, used in turn.
type sessions struct {
	all  []*mcp.ClientSession
	next int
}

func connect(ctx context.Context, urls []string, hc *http.Client) (*sessions, error) {
	s := &sessions{}
	for _, u := range urls {
		c := mcp.NewClient(&mcp.Implementation{Name: "scaleload", Version: "1"}, nil)
		// 2025-11-25: a critical call asks for approval with approval_required and the
		// approval's URL, which this client follows without an elicitation handler.
		sess, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u, HTTPClient: hc},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			s.close()
			return nil, fmt.Errorf("connect %s: %w", u, err)
		}
		s.all = append(s.all, sess)
	}
	return s, nil
}

// callers starts n goroutines on wg, each with sessions of its own to every replica (the
// first call of caller w on replica w) running work until it returns.
func callers(ctx context.Context, n int, urls []string, hc *http.Client, wg *sync.WaitGroup, work func(w int, s *sessions)) error {
	for w := range n {
		s, err := connect(ctx, urls, hc)
		if err != nil {
			return err
		}
		s.next = w
		wg.Go(func() {
			defer s.close()
			work(w, s)
		})
	}
	return nil
}

func (s *sessions) close() {
	for _, sess := range s.all {
		sess.Close()
	}
}

// call calls tool on the next replica and returns its structured result, or an error that
// quotes a tool error's text.
func (s *sessions) call(ctx context.Context, tool string, args map[string]any) (map[string]any, error) {
	sess := s.all[s.next%len(s.all)]
	s.next++
	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, toolError{text(res)}
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: no structured result: %s", tool, text(res))
	}
	return m, nil
}

type toolError struct{ text string }

func (e toolError) Error() string { return e.text }

func text(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

func httpClient(token string) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	// Every caller keeps its connections: none is opened per call.
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: bearer{token: token, next: t}, Timeout: 2 * time.Minute}
}

// prepareArgs are prepare_reminder's arguments for a customer of its own, id.
func prepareArgs(id string) map[string]any {
	return map[string]any{
		"customer": map[string]any{"id": id, "name": "Cliente " + id + " Ltda", "email": id + "@scale.example"},
		"invoices": []map[string]any{
			{"id": "inv-" + id + "-1", "dueDate": "2026-10-15", "amountCents": 150000},
			{"id": "inv-" + id + "-2", "dueDate": "2026-11-01", "amountCents": 42000},
		},
		"tone": "friendly", "idempotencyKey": "k-" + id}
}

// errorLog keeps the first few distinct errors, to print.
type errorLog struct {
	mu   sync.Mutex
	seen map[string]bool
	n    atomic.Int64
}

func (e *errorLog) add(err error) {
	e.n.Add(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	if e.seen == nil {
		e.seen = map[string]bool{}
	}
	if !e.seen[msg] && len(e.seen) < 5 {
		e.seen[msg] = true
		fmt.Fprintln(os.Stderr, "scaleload:", msg)
	}
}

// prepareOne writes the draft for customer id and returns its id.
func prepareOne(ctx context.Context, s *sessions, id string) (string, error) {
	m, err := s.call(ctx, "collections.prepare_reminder", prepareArgs(id))
	if err != nil {
		return "", err
	}
	draft, _ := m["draftId"].(string)
	if draft == "" || m["created"] != true {
		return "", fmt.Errorf("prepare_reminder for %s answered %v, want a new draft", id, m)
	}
	return draft, nil
}

func prepareDrafts(ctx context.Context, o prepareOptions) error {
	hc := httpClient(o.token)
	var next atomic.Int64
	var mu sync.Mutex
	var ids []string
	var errs errorLog
	var wg sync.WaitGroup
	err := callers(ctx, o.c, o.urls, hc, &wg, func(_ int, s *sessions) {
		for {
			i := next.Add(1)
			if i > int64(o.n) {
				return
			}
			draft, err := prepareOne(ctx, s, fmt.Sprintf("%s-%d", o.prefix, i))
			if err != nil {
				errs.add(err)
				continue
			}
			mu.Lock()
			ids = append(ids, draft)
			mu.Unlock()
		}
	})
	wg.Wait()
	if err != nil {
		return err
	}
	if n := errs.n.Load(); n > 0 {
		return fmt.Errorf("prepare: %d of %d calls failed", n, o.n)
	}
	return os.WriteFile(o.out, []byte(strings.Join(ids, "\n")+"\n"), 0o644)
}

func readDrafts(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ids []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id := strings.TrimSpace(sc.Text()); id != "" {
			ids = append(ids, id)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: no draft ids", path)
	}
	return ids, nil
}

// approvalID matches the approval an approval_required message names.
var approvalID = regexp.MustCompile(`/approvals/(a_[A-Za-z0-9_-]+)`)

// outbox is the outbox workload's state, shared by its senders.
type outbox struct {
	o      runOptions
	hc     *http.Client // for the sink
	drafts []string
	next   atomic.Int64 // index of the next chunk of drafts
	queued atomic.Int64 // messages the bulk sends queued
	bulks  atomic.Int64
	base   int64 // the sink's count at the start
	errs   errorLog
}

// waitBacklog waits until at most o.backlog queued messages are not yet at the sink.
func (ob *outbox) waitBacklog(ctx context.Context) error {
	for {
		n, err := sinkCount(ctx, ob.hc, ob.o.sink)
		if err != nil {
			return err
		}
		if ob.queued.Load()-(n-ob.base) <= int64(ob.o.backlog) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// send sends one chunk of drafts as one bulk send: the dry run, the call that asks for
// approval, the person's approval, the approved retry.
func (ob *outbox) send(ctx context.Context, s *sessions, chunk []string, key string) error {
	args := map[string]any{"draftIds": chunk, "dryRun": true}
	dry, err := s.call(ctx, "collections.bulk_send_reminders", args)
	if err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	args = map[string]any{"draftIds": chunk, "planHash": dry["planHash"], "idempotencyKey": key}
	_, err = s.call(ctx, "collections.bulk_send_reminders", args)
	var te toolError
	if !errors.As(err, &te) || !strings.Contains(te.text, "approval_required") {
		return fmt.Errorf("the real call = %v, want approval_required", err)
	}
	m := approvalID.FindStringSubmatch(te.text)
	if m == nil {
		return fmt.Errorf("approval_required names no approval: %s", te.text)
	}
	cmd := exec.CommandContext(ctx, ob.o.cobranca, "approvals", "approve", m[1], "--token", "-")
	cmd.Stdin = strings.NewReader(ob.o.approver + "\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("approvals approve %s: %v: %s", m[1], err, out)
	}
	sent, err := s.call(ctx, "collections.bulk_send_reminders", args)
	if err != nil {
		return fmt.Errorf("the approved retry: %w", err)
	}
	q, _ := sent["queued"].(float64)
	if int(q) != len(chunk) {
		return fmt.Errorf("the approved retry queued %v of %d: %v", sent["queued"], len(chunk), sent)
	}
	ob.queued.Add(int64(q))
	ob.bulks.Add(1)
	return nil
}

func drive(ctx context.Context, o runOptions, stdout io.Writer) error {
	hc := httpClient(o.token)
	stop := time.Now().Add(o.d)
	var wg sync.WaitGroup
	var mediumOK atomic.Int64
	var mediumErrs errorLog
	var mediumSecs float64
	var medium sync.WaitGroup
	start := time.Now()
	if err := callers(ctx, o.medium, o.urls, hc, &medium, func(w int, s *sessions) {
		for i := 0; time.Now().Before(stop); i++ {
			if _, err := prepareOne(ctx, s, fmt.Sprintf("%s-%d-%d", o.prefix, w, i)); err != nil {
				mediumErrs.add(err)
				continue
			}
			mediumOK.Add(1)
		}
	}); err != nil {
		return err
	}
	wg.Go(func() {
		medium.Wait()
		mediumSecs = time.Since(start).Seconds()
	})

	var ob *outbox
	var outboxSecs float64
	var outboxErr error
	if o.drafts != "" {
		drafts, err := readDrafts(o.drafts)
		if err != nil {
			return err
		}
		ob = &outbox{o: o, hc: &http.Client{Timeout: 10 * time.Second}, drafts: drafts}
		if ob.base, err = sinkCount(ctx, ob.hc, o.sink); err != nil {
			return fmt.Errorf("sink: %w", err)
		}
		var senders sync.WaitGroup
		if err := callers(ctx, o.bulkC, o.urls, hc, &senders, func(_ int, s *sessions) {
			for time.Now().Before(stop) {
				i := int(ob.next.Add(1)) - 1
				if i*o.bulk >= len(drafts) {
					return
				}
				if err := ob.waitBacklog(ctx); err != nil {
					ob.errs.add(err)
					return
				}
				chunk := drafts[i*o.bulk : min((i+1)*o.bulk, len(drafts))]
				if err := ob.send(ctx, s, chunk, fmt.Sprintf("%s-bulk-%d", o.prefix, i)); err != nil {
					ob.errs.add(err)
				}
			}
		}); err != nil {
			return err
		}
		wg.Go(func() {
			senders.Wait()
			// Every queued message delivered, within two minutes.
			deadline := time.Now().Add(2 * time.Minute)
			for {
				n, err := sinkCount(ctx, ob.hc, o.sink)
				if err != nil {
					outboxErr = err
					break
				}
				if n-ob.base >= ob.queued.Load() {
					break
				}
				if time.Now().After(deadline) {
					outboxErr = fmt.Errorf("outbox: %d of %d queued messages delivered after 2m", n-ob.base, ob.queued.Load())
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			outboxSecs = time.Since(start).Seconds()
		})
	}
	wg.Wait()
	if o.medium > 0 {
		fmt.Fprintf(stdout, "medium_ok=%d\nmedium_err=%d\nmedium_s=%.3f\n", mediumOK.Load(), mediumErrs.n.Load(), mediumSecs)
	}
	if ob != nil {
		n, err := sinkCount(ctx, ob.hc, o.sink)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "outbox_sent=%d\noutbox_bulks=%d\noutbox_err=%d\noutbox_s=%.3f\n", n-ob.base, ob.bulks.Load(), ob.errs.n.Load(), outboxSecs)
	}
	if outboxErr != nil {
		return outboxErr
	}
	if o.medium > 0 && mediumOK.Load() == 0 {
		return errors.New("medium: no call succeeded")
	}
	if ob != nil && ob.bulks.Load() == 0 {
		return errors.New("outbox: no bulk send succeeded")
	}
	return nil
}
