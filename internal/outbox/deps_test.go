package outbox_test

import (
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/deptest"
)

// TestQueuesOnTheDriverItIsGiven: the outbox is given River's driver (Config.Driver, from
// internal/outbox/queue) and links neither store implementation nor driver.
func TestQueuesOnTheDriverItIsGiven(t *testing.T) {
	const self = "github.com/cobranca/cobranca/internal/outbox"
	for _, d := range deptest.NonStd(t, self) {
		for _, banned := range []string{
			"github.com/cobranca/cobranca/internal/store/postgres",
			"github.com/cobranca/cobranca/internal/store/sqlite",
			"github.com/riverqueue/river/riverdriver/riverpgxv5",
			"github.com/riverqueue/river/riverdriver/riversqlite",
			"github.com/jackc/",
			"modernc.org/sqlite",
		} {
			if strings.HasPrefix(d, banned) {
				t.Errorf("%s depends on %s", self, d)
			}
		}
	}
}
