package mcpapi

import (
	"bytes"
	"context"
	"mime"
	"net/http"

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
	_, ok := eachMember(meta, 0, func(key string, v int) (int, bool) {
		end, ok := skipValue(meta, v)
		if ok && key == "progressToken" {
			tokens++
			tok = meta[v:end]
		}
		return end, ok
	})
	return ok && tokens == 1 && len(tok) <= maxProgressToken && (tok[0] == '"' || tok[0] == '-' || tok[0] >= '0' && tok[0] <= '9')
}

// progressOf is the Call.Progress of a tools/call go-sdk dispatched: it
// notifies the client's progress token, on the request's event stream; nil
// when the call carries no token or is not served as a stream.
func progressOf(ctx context.Context, req *mcp.CallToolRequest) func(done, total int64, message string) {
	d, ok := ctx.Value(dispatchKey{}).(*dispatch)
	token := req.Params.GetProgressToken()
	if !ok || !d.stream || token == nil {
		return nil
	}
	return func(done, total int64, message string) {
		p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: float64(done), Message: message}
		if total > 0 {
			p.Total = float64(total)
		}
		// Best effort: a client that left misses its progress, not its call.
		_ = req.Session.NotifyProgress(ctx, p)
	}
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
