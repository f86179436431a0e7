//go:build !386 && !arm && !mips && !mipsle

package queue

import (
	"database/sql"
	"errors"

	"context"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

func forSQLite(db *sqlite.DB) (*outbox.Driver, error) {
	return outbox.RiverDriver(db.RiverDriver(), sqlTx), nil
}

// sqlTx is River's transaction inside t, a transaction of store/sqlite.
func sqlTx(_ context.Context, t store.Tx) (*sql.Tx, error) {
	stx, ok := sqlite.SQLTx(t)
	if !ok {
		return nil, errors.New("the transaction is not SQLite's")
	}
	return stx, nil
}
