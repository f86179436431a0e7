package sqlite

import (
	"database/sql"

	"github.com/cobranca/cobranca/internal/store"
)

// SQLTx returns t, a transaction of InTx on SQLite, as the *sql.Tx under it, for a library
// that inserts through database/sql (River's transactional insert). InTx still commits or
// rolls it back. It reports false when t is not one of this package's transactions.
func SQLTx(t store.Tx) (*sql.Tx, bool) {
	st, ok := t.(*tx)
	if !ok {
		return nil, false
	}
	return st.tx, true
}
