// Package queue gives the e-mail outbox River's driver on the store it runs on: the pgx
// driver on PostgreSQL, the SQLite driver on SQLite. cmd/cobranca (and the tests) pass it in
// (outbox.Config.Driver), so that internal/outbox links neither store nor driver.
package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/postgres"
	"github.com/cobranca/cobranca/internal/store/sqlite"
)

// For returns River's driver on db, a store opened by store/postgres or store/sqlite.
func For(db store.DB) (*outbox.Driver, error) {
	switch d := db.(type) {
	case *postgres.DB:
		return outbox.RiverDriver(d.RiverDriver(), pgxTx), nil
	case *sqlite.DB:
		return forSQLite(d)
	}
	return nil, fmt.Errorf("outbox: no River driver for %T", db)
}

// pgxTx is River's transaction inside t, a transaction of store/postgres.
func pgxTx(ctx context.Context, t store.Tx) (pgx.Tx, error) {
	ptx, ok, err := postgres.PgxTx(ctx, t)
	if !ok {
		return nil, errors.New("the transaction is not PostgreSQL's")
	}
	return ptx, err
}
