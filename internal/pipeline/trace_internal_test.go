package pipeline

import (
	"context"
	"testing"

	"github.com/cobranca/cobranca/internal/request"
)

// BenchmarkStepsUntraced is all that tracing adds to a call when it is off
// (no endpoint, no server span): the span lookup in begin, and every step's
// span start and end of an analyze call, on a context as deep as a
// request's. With the whole call at ≈ 270 µs (BenchmarkPipeline), this is
// what "not measurably slower" rests on, as a number; no allocation.
func BenchmarkStepsUntraced(b *testing.B) {
	type k int
	ctx := request.With(context.Background(), &request.Info{ID: "bench"})
	for i := range 6 { // the values a request's context carries by the time Do runs
		ctx = context.WithValue(ctx, k(i), i)
	}
	b.ReportAllocs()
	for b.Loop() {
		cl := callState{ctx: ctx}
		cl.traced = recordingSpan(ctx)
		func() {
			defer cl.endStep("")
			c := ctx
			for _, s := range []string{stepAuthorize, stepValidate, stepRun} {
				c = cl.step(c, s)
			}
			cl.endStep("")
			cl.step(cl.ctx, stepAudit)
			cl.endStep("")
		}()
	}
}
