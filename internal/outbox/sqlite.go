//go:build !386 && !arm && !mips && !mipsle

package outbox

import (
	"github.com/riverqueue/river"

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
