package pipelinetest

import (
	"context"
	"sync"

	"github.com/cobranca/cobranca/internal/store"
)

// ArmedDB is a store.DB that runs a function, once, before the transaction
// that follows a number of others (Arm): what another request does between
// the pipeline's checks and the transaction of the execution.
type ArmedDB struct {
	store.DB
	mu   sync.Mutex
	skip int
	fn   func()
}

// Arm has fn run before the transaction begun after skip others.
func (a *ArmedDB) Arm(skip int, fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.skip, a.fn = skip, fn
}

func (a *ArmedDB) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	a.mu.Lock()
	var run func()
	if a.fn != nil {
		if a.skip--; a.skip < 0 {
			run, a.fn = a.fn, nil
		}
	}
	a.mu.Unlock()
	if run != nil {
		run()
	}
	return a.DB.InTx(ctx, fn)
}

// Unapprove sets the approval id back to pending, undecided.
func Unapprove(ctx context.Context, db store.DB, id string) error {
	_, err := db.Exec(ctx, `UPDATE approval SET state = 'pending', approver = NULL, approver_acr = NULL, approver_auth_time = NULL, decided_at = NULL WHERE id = $1`, id)
	return err
}
