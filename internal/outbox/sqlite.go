//go:build !386 && !arm && !mips && !mipsle

package outbox

import (
	"context"
	"errors"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riversqlite"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// newSQLiteQueue is River's client on db's SQLite driver.
func newSQLiteQueue(db *sqlite.DB, rc *river.Config) (queue, error) {
	c, err := river.NewClient(db.RiverDriver(), rc)
	if err != nil {
		return nil, err
	}
	return sqliteQueue{c}, nil
}

func (q sqliteQueue) completeTx(ctx context.Context, tx store.Tx, job *river.Job[Args]) error {
	stx, ok := sqlite.SQLTx(tx)
	if !ok {
		return errors.New("the transaction is not SQLite's")
	}
	_, err := river.JobCompleteTx[*riversqlite.Driver](ctx, stx, job)
	return err
}
