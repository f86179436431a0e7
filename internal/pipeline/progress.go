package pipeline

import "context"

// ReportProgress tells the client of the call in ctx that done of total
// units of its work are done (total 0: unknown), with a short message for a
// person (counts, never a payload), when the client asked to be told
// (Call.Progress); otherwise it does nothing. It is cheap, and sends every
// report it is given: a tool reports as often as it likes its client to
// hear (every few percent, every few hundred items).
func ReportProgress(ctx context.Context, done, total int64, message string) {
	if cl, ok := ctx.Value(callKey{}).(*callState); ok && cl.call.Progress != nil {
		cl.call.Progress(done, total, message)
	}
}
