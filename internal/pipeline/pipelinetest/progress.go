package pipelinetest

import (
	"context"
	"fmt"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
)

// Progressing returns Effectful's tool for c that, in its transaction, reports its progress
// (pipeline.ReportProgress) steps times — done 1 to steps of total steps, message
// "step i of steps" — before it adds its row. After each report it calls reported, when not
// nil, with the step: a test holds the call there until its client has heard of the step,
// proving the reports reach the client while the call runs.
func Progressing(c *contract.Contract, steps int64, reported func(ctx context.Context, step int64) error) pipeline.Tool {
	t := Effectful(c, nil)
	execute := t.Execute
	t.Execute = func(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
		for i := int64(1); i <= steps; i++ {
			pipeline.ReportProgress(ctx, i, steps, fmt.Sprintf("step %d of %d", i, steps))
			if reported != nil {
				if err := reported(ctx, i); err != nil {
					return pipeline.Effect{}, err
				}
			}
		}
		return execute(ctx, tx, v)
	}
	return t
}
