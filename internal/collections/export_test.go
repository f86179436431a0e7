package collections

import (
	"context"

	"github.com/cobranca/cobranca/internal/store"
)

// Sendable runs send_reminder's checks of draft id (sendable) in q, today: what its Execute
// runs, in its transaction, before it enqueues.
func Sendable(ctx context.Context, q store.Querier, id, today string, required bool) error {
	_, _, _, err := sendable(ctx, q, id, today, required)
	return err
}

// Contactable runs the checks send_reminder ran before the ledger's (contactable): the draft,
// its customers, the draft locked.
func Contactable(ctx context.Context, q store.Querier, id, today string) error {
	_, _, err := contactable(ctx, q, id, today)
	return err
}

// FailAfterPrepare makes b's next runs fail once their drafts are written (nil: no more).
func (b *Batcher) FailAfterPrepare(err error) { b.failAfterPrepare = err }

// SendApproved runs what the send job queued by OnApproved's hook runs for the batch approval
// id is for: its send, now, if the window is open.
func (b *Batcher) SendApproved(ctx context.Context, id string) (int, error) {
	n, _, err := b.send(ctx, id)
	return n, err
}
