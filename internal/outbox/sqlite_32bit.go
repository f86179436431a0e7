//go:build 386 || arm || mips || mipsle

package outbox

import (
	"errors"

	"github.com/riverqueue/river"

	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// newSQLiteQueue refuses: River's SQLite driver does not compile on 32-bit platforms (see
// internal/store/sqlite's river_32bit.go).
func newSQLiteQueue(*sqlite.DB, *river.Config) (queue, error) {
	return nil, errors.New("the e-mail outbox needs a 64-bit platform on SQLite (River's SQLite driver does not build on 32-bit); use PostgreSQL")
}
