//go:build 386 || arm || mips || mipsle

package queue

import (
	"errors"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// forSQLite refuses: River's SQLite driver does not compile on 32-bit platforms (see
// internal/store/sqlite's river_32bit.go).
func forSQLite(*sqlite.DB) (*outbox.Driver, error) {
	return nil, errors.New("the e-mail outbox needs a 64-bit platform on SQLite (River's SQLite driver does not build on 32-bit); use PostgreSQL")
}
