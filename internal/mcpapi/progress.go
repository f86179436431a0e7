package mcpapi

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Progress notifications (notifications/progress) reach a client only on
// the event stream of its request: go-sdk with JSONResponse sends the answer
// alone. A tools/call whose _meta carries a progressToken is therefore served
// by go-sdk's event-stream handler (Handler.sdkStream), and the pipeline's
// Call.Progress sends the tool's reports (pipeline.ReportProgress) as
// notifications with that token. Every other request, the fast path's
// included, is answered application/json as before.

// maxProgressToken bounds a progress token as sent: every notification
// repeats it, a hundred of them on a large bulk send.
const maxProgressToken = 256

// hasProgressToken reports whether meta, a tools/call's params._meta as sent
// (nil when absent), carries one progress token: a string or a number (MCP's
// ProgressToken), of at most maxProgressToken bytes as sent. Any other token,
// or a token named twice (go-sdk keeps the last), asks for nothing: the call
// is answered application/json, with no notification echoing it.
func hasProgressToken(meta []byte) bool {
	if len(meta) == 0 || meta[0] != '{' {
		return false
	}
	var tokens int
	var tok []byte
	ok := eachMember(meta, func(key string, v []byte) bool {
		if key == "progressToken" {
			tokens++
			tok = v
		}
		return true
	})
	return ok && tokens == 1 && len(tok) <= maxProgressToken && (tok[0] == '"' || tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9')
}

// progressOf is the Call.Progress of a tools/call go-sdk dispatched, and the
// function to call once the call returned, before its answer is written: nil
// and a no-op when the call carries no token or is not served as a stream.
//
// A tool reports from its transaction (its locks held; on SQLite, the one
// writer), so a report never waits for the client: it is queued, and a
// goroutine of the call writes the queue, in order, on the request's event
// stream. When the client reads slower than the tool reports, the oldest
// report not yet written makes way for the newest (at most maxQueuedProgress
// are held): the client always hears the last. wait returns once every report
// kept is written (or the client is gone), so the answer comes after them.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) (report func(done, total int64, message string), wait func()) {
	d, ok := ctx.Value(dispatchKey{}).(*dispatch)
	token := req.Params.GetProgressToken()
	if !ok || !d.stream || token == nil {
		return nil, func() {}
	}
	q := &progressQueue{wake: make(chan struct{}, 1), done: make(chan struct{})}
	go q.run(func(p *mcp.ProgressNotificationParams) {
		p.ProgressToken = token
		// Best effort: a client that left misses its progress, not its call.
		_ = req.Session.NotifyProgress(ctx, p)
	})
	return q.report, q.close
}

// maxQueuedProgress is how many reports a call holds for a client that reads
// slower than its tool reports.
const maxQueuedProgress = 32

// progressQueue holds a call's progress reports until its writer sends them.
type progressQueue struct {
	mu     sync.Mutex
	queued []*mcp.ProgressNotificationParams
	closed bool
	wake   chan struct{} // a report was queued, or the queue closed
	done   chan struct{} // closed when the writer has returned
}

// report queues a report; it never blocks on the client.
func (q *progressQueue) report(done, total int64, message string) {
	p := &mcp.ProgressNotificationParams{Progress: float64(done), Message: message}
	if total > 0 {
		p.Total = float64(total)
	}
	q.mu.Lock()
	if len(q.queued) == maxQueuedProgress {
		q.queued = slices.Delete(q.queued, 0, 1)
	}
	q.queued = append(q.queued, p)
	q.mu.Unlock()
	q.signal()
}

func (q *progressQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default: // the writer is already woken
	}
}

// run writes the queued reports in order until the queue is closed and empty.
func (q *progressQueue) run(send func(*mcp.ProgressNotificationParams)) {
	defer close(q.done)
	for {
		q.mu.Lock()
		if len(q.queued) == 0 {
			closed := q.closed
			q.mu.Unlock()
			if closed {
				return
			}
			<-q.wake
			continue
		}
		p := q.queued[0]
		q.queued = q.queued[1:]
		q.mu.Unlock()
		send(p)
	}
}

// close waits until every report queued is written.
func (q *progressQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
	<-q.done
}

// eventStream reports whether h declares a text/event-stream body.
func eventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// lastEventData is the data of the last event of an event stream (its data
// lines joined by newlines), or nil when it has none.
func lastEventData(stream []byte) []byte {
	var data, event []byte
	seen := false
	for line := range bytes.Lines(stream) {
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0: // the end of an event
			if seen {
				data, event, seen = event, nil, false
			}
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(line[len("data:"):], []byte(" "))
			if seen {
				event = append(event, '\n')
			}
			event, seen = append(event, v...), true
		}
	}
	if seen {
		data = event
	}
	return data
}
