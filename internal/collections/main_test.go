package collections_test

import (
	"testing"

	"github.com/cobranca/cobranca/internal/pgtest"
)

// pg is the PostgreSQL cluster of this package's store-backed tool tests.
var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }
