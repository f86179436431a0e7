package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/riverqueue/river"

	"github.com/cobranca/cobranca/internal/outbox"
)

// The headers of a webhook post: the Unix time it was signed at, and the signature,
// "sha256=" and the hex HMAC-SHA256 of "<timestamp>.<body>" under the webhook's secret.
const (
	TimestampHeader = "X-Cobranca-Timestamp"
	SignatureHeader = "X-Cobranca-Signature"
)

// Sign is the signature header's value of body posted at timestamp (the timestamp header's
// value, Unix seconds) under secret.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify checks a post as its receiver should: signature is the signature header's value
// over timestamp (the timestamp header's) and body under secret, and timestamp is within
// tolerance of now, so that a post captured and replayed later is refused. The error names the
// header that is wrong.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, tolerance time.Duration) error {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil || timestamp != strconv.FormatInt(sec, 10) {
		return errors.New(TimestampHeader + ": must be Unix seconds")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New(TimestampHeader + ": more than " + tolerance.String() + " from now")
	}
	hexMAC, ok := strings.CutPrefix(signature, "sha256=")
	got, err := hex.DecodeString(hexMAC)
	if !ok || err != nil || len(got) != sha256.Size {
		return errors.New(SignatureHeader + ": must be sha256= and 64 hex digits")
	}
	want, _ := hex.DecodeString(strings.TrimPrefix(Sign(secret, timestamp, body), "sha256="))
	if !hmac.Equal(got, want) {
		return errors.New(SignatureHeader + ": does not match the body and timestamp")
	}
	return nil
}

// webhookArgs is one webhook post as River stores it: the message (no customer data: a
// Notice's), unique by Ref (the approval's or the digest's) — one post each, whoever asks.
type webhookArgs struct {
	Ref  string `json:"ref" river:"unique"`
	Text string `json:"text"`
	// Until is when the post stops being worth making (the approval's expiry, Unix seconds);
	// 0: never.
	Until int64 `json:"until,omitempty"`
}

func (webhookArgs) Kind() string { return "cobranca.approval_webhook" }

// Payload is the JSON body of a post: the field Slack, Microsoft Teams and Google Chat
// incoming webhooks all read.
type Payload struct {
	Text string `json:"text"`
}

// post delivers a webhook job. The receiver's 2xx completes it; 408, 429, 5xx and network
// failures are retried (River's backoff, webhookAttempts in all); any other answer, or the
// approval's expiry, gives it up. Errors name neither the URL (its path is often the
// webhook's credential) nor the receiver's reply.
func (n *Notifier) post(ctx context.Context, _ *outbox.Outbox, job *river.Job[webhookArgs]) error {
	if job.Args.Until != 0 && !n.now().Before(time.Unix(job.Args.Until, 0)) {
		n.log.WarnContext(ctx, "notify: webhook post dropped: the approval expired before it could be delivered", "ref", job.Args.Ref, "attempt", job.Attempt)
		return river.JobCancel(errors.New("the approval expired before the post was delivered"))
	}
	body, err := json.Marshal(Payload{Text: job.Args.Text})
	if err != nil {
		return river.JobCancel(err)
	}
	ts := strconv.FormatInt(n.now().Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.hookURL, bytes.NewReader(body))
	if err != nil {
		return river.JobCancel(errors.New("the webhook URL cannot be posted to"))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "cobranca")
	req.Header.Set(TimestampHeader, ts)
	req.Header.Set(SignatureHeader, Sign(n.secret, ts, body))
	resp, err := n.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // without the URL
		}
		n.log.WarnContext(ctx, "notify: webhook post failed, will retry", "ref", job.Args.Ref, "attempt", job.Attempt, "error", err.Error())
		return fmt.Errorf("webhook post: %w", err)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
		return nil
	case c == http.StatusRequestTimeout || c == http.StatusTooManyRequests || c >= 500:
		n.log.WarnContext(ctx, "notify: webhook refused the post for now, will retry", "ref", job.Args.Ref, "attempt", job.Attempt, "status", c)
		return fmt.Errorf("webhook answered %d", c)
	default:
		n.log.ErrorContext(ctx, "notify: webhook refused the post for good", "ref", job.Args.Ref, "status", c)
		return river.JobCancel(fmt.Errorf("webhook answered %d", c))
	}
}
