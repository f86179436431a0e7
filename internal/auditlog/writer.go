package auditlog

import (
	"context"
	"fmt"
	"time"
)

// maxBatch bounds how many standalone events one group commit writes.
const maxBatch = 64

// drainTimeout bounds each write of an event still queued at shutdown.
const drainTimeout = 5 * time.Second

// pending is one Record call waiting for its group commit.
type pending struct {
	rec  record
	done chan error
}

// RunWriter group-commits the events Record is given until ctx ends: it
// takes the first waiting event, gathers every other one already waiting (up
// to maxBatch), writes them with one multi-row INSERT in one transaction and
// only then lets each Record return. Under concurrent calls that is one
// statement and one commit for many events instead of one each; with a
// single caller it is the same single INSERT as before. Record still returns
// only once its event is committed, so no call is answered before its audit
// event exists. Stop it only after every Record caller has returned (serve
// stops it after the HTTP server has drained).
func (l *Log) RunWriter(ctx context.Context) {
	l.writerUp.Store(true)
	defer l.writerUp.Store(false)
	batch := make([]pending, 0, maxBatch)
	for {
		batch = batch[:0]
		select {
		case <-ctx.Done():
			l.drainWriter()
			return
		case p := <-l.queue:
			batch = append(batch, p)
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case p := <-l.queue:
				batch = append(batch, p)
			default:
				break gather
			}
		}
		// The events' own deadlines are the callers'; the write itself
		// must not be cut short by one caller leaving.
		err := l.writeBatch(context.WithoutCancel(ctx), batch)
		for _, p := range batch {
			p.done <- err
		}
		if err == nil {
			l.Kick()
		}
	}
}

// drainWriter answers the events still queued when the writer stops, one by
// one, so that none is left waiting; each write has a deadline, so a hung
// database cannot hang shutdown.
func (l *Log) drainWriter() {
	for {
		select {
		case p := <-l.queue:
			ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
			p.done <- l.writeBatch(ctx, []pending{p})
			cancel()
		default:
			return
		}
	}
}

func (l *Log) writeBatch(ctx context.Context, batch []pending) error {
	if len(batch) == 1 {
		return l.write(ctx, l.db, &batch[0].rec)
	}
	recs := make([]record, len(batch))
	for i := range batch {
		recs[i] = batch[i].rec
	}
	return l.insertRecords(ctx, recs, false)
}

// insertRecords writes recs with one multi-row INSERT; with skipKnown, those whose nonce is
// already in the table are skipped.
func (l *Log) insertRecords(ctx context.Context, recs []record, skipKnown bool) error {
	d := l.db.Dialect()
	args := make([]any, 0, (insertCount+1)*len(recs))
	now := l.now().UnixMicro()
	for i := range recs {
		args = insertArgs(args, &recs[i], d, now)
	}
	if _, err := l.db.Exec(ctx, insertSQL(d, len(recs), skipKnown), args...); err != nil {
		return fmt.Errorf("audit append (%d events): %w", len(recs), err)
	}
	return nil
}
