package queue_test

import (
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/outbox/queue"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// otherStore is a store neither store/postgres nor store/sqlite opened.
type otherStore struct{ store.DB }

func TestFor(t *testing.T) {
	if d, err := queue.For(otherStore{}); err == nil || d != nil || !strings.Contains(err.Error(), "no River driver for queue_test.otherStore") {
		t.Errorf("For(another store) = %v, %v; want an error naming it", d, err)
	}
	if d, err := queue.For(storetest.SQLite(t)); err != nil || d == nil {
		t.Errorf("For(SQLite) = %v, %v; want its driver", d, err)
	}
}
