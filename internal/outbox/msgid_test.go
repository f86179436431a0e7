package outbox_test

import (
	"net/mail"
	"os"
	"path/filepath"
	"testing"

	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// TestMessageIDGloballyUnique: two stores (two installations, or one restored from a backup,
// whose entry ids start again where the backup left them) give their first entries the same
// id; their messages must still carry two Message-IDs (RFC 5322 §3.6.4), or a receiver that
// drops duplicates by Message-ID drops the second reminder, another message, unseen.
func TestMessageIDGloballyUnique(t *testing.T) {
	var ids []string
	for range 2 {
		db := storetest.SQLite(t)
		dir := filepath.Join(t.TempDir(), "outbox")
		o := start(t, db, outbox.Dir{Path: dir}, nil)
		if _, err := enqueue(t, db, o, msg, nil); err != nil {
			t.Fatal(err)
		}
		var entries []os.DirEntry
		waitFor(t, "the .eml", func() bool { entries, _ = os.ReadDir(dir); return len(entries) == 1 })
		f, err := os.Open(filepath.Join(dir, entries[0].Name()))
		if err != nil {
			t.Fatal(err)
		}
		m, err := mail.ReadMessage(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.Header.Get("Message-Id"))
	}
	if ids[0] == ids[1] {
		t.Fatalf("two stores' first messages share the Message-ID %s", ids[0])
	}
}
