package files_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/pgtest"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

var pg = pgtest.New()

func TestMain(m *testing.M) { pg.Run(m) }

var t0 = time.Date(2025, 12, 24, 9, 30, 0, 0, time.UTC)

func ring(t testing.TB, keys ...reqstate.Key) *reqstate.Ring {
	t.Helper()
	if len(keys) == 0 {
		keys = []reqstate.Key{{ID: "k1", Secret: bytes.Repeat([]byte{1}, 32)}}
	}
	r, err := reqstate.NewRing(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newLinks(t testing.TB, keys ...reqstate.Key) *files.Links {
	t.Helper()
	l, err := files.NewLinks(ring(t, keys...), "https://files.example.com/base/")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func add(t testing.TB, db store.DB, f files.Upload) files.File {
	t.Helper()
	var out files.File
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		out, err = files.Add(ctx, tx, f, files.DefaultMaxBytes, t0)
		return err
	})
	if err != nil {
		t.Fatalf("Add: %v", err)
	}
	return out
}

// customer stores customer id, for files that belong to one.
func customer(t testing.TB, db store.DB, id string) {
	t.Helper()
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		_, err := customers.Upsert(ctx, tx, customers.Record{ID: id, Name: "Ana Ltda", Email: "ana@example.com"}, t0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestAddGetList(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		pdf := append([]byte("%PDF-1.7\n"), randomBytes(3*1024*1024+17)...) // more than two chunks
		customer(t, db, "C-1")
		a := add(t, db, files.Upload{Name: "/tmp/dir/Boleto março.pdf", Content: pdf, CustomerID: "C-1", CreatedBy: "ana"})
		b := add(t, db, files.Upload{Name: "extrato.csv", Content: []byte("a;b\n1;2\n"), CreatedBy: "ana"})
		if !files.ValidFileID(a.ID) || a.Name != "Boleto março.pdf" || a.MediaType != "application/pdf" || a.Size != int64(len(pdf)) ||
			a.SHA256 != sha256.Sum256(pdf) || a.CustomerID != "C-1" || a.CreatedBy != "ana" || !a.CreatedAt.Equal(t0) {
			t.Errorf("Add = %+v", a)
		}
		if b.MediaType != "text/csv; charset=utf-8" || b.CustomerID != "" {
			t.Errorf("Add(csv) = %+v", b)
		}
		got, err := files.Get(ctx, db, a.ID)
		if err != nil || got != a {
			t.Errorf("Get = %+v, %v; want %+v", got, err, a)
		}
		list, err := files.List(ctx, db)
		if err != nil || len(list) != 2 {
			t.Fatalf("List = %v, %v", list, err)
		}
		// The content comes back exactly, chunk by chunk.
		var back []byte
		for seq := int64(0); ; seq++ {
			c, err := files.ReadChunk(ctx, db, a.ID, seq)
			if errors.Is(err, store.ErrNoRows) {
				if seq != 4 {
					t.Errorf("content in %d pieces, want 4", seq)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := min(files.ChunkSize, a.Size-seq*files.ChunkSize); int64(len(c)) != want {
				t.Errorf("piece %d has %d bytes, want %d", seq, len(c), want)
			}
			back = append(back, c...)
		}
		if sha256.Sum256(back) != a.SHA256 {
			t.Errorf("content read back differs (%d bytes, want %d)", len(back), a.Size)
		}
		// An empty file has no piece.
		empty := add(t, db, files.Upload{Name: "vazio.txt", CreatedBy: "ana"})
		if _, err := files.ReadChunk(ctx, db, empty.ID, 0); empty.Size != 0 || !errors.Is(err, store.ErrNoRows) {
			t.Errorf("empty file: size %d, first piece %v; want none", empty.Size, err)
		}
		if _, err := files.Get(ctx, db, "f_"+strings.Repeat("a", 26)); !errors.Is(err, files.ErrFileNotFound) {
			t.Errorf("Get(unknown) = %v, want file_not_found", err)
		}
	})
}

func TestAddRefuses(t *testing.T) {
	storetest.Each(t, pg, testAddRefuses)
}

func testAddRefuses(t *testing.T, db store.DB) {
	customer(t, db, "C-1")
	for _, tt := range []struct {
		name  string
		f     files.Upload
		max   int64
		code  failure.Code
		field string
	}{
		{"over the limit", files.Upload{Name: "a.pdf", Content: make([]byte, 101)}, 100, files.CodeFileTooLarge, "content"},
		{"at the limit", files.Upload{Name: "a.pdf", Content: make([]byte, 100)}, 100, "", ""},
		{"empty name", files.Upload{Name: "", Content: []byte("x")}, 100, files.CodeInvalidFile, "name"},
		{"dot dot", files.Upload{Name: "a/..", Content: []byte("x")}, 100, files.CodeInvalidFile, "name"},
		{"bidi control in name", files.Upload{Name: "fatura\u202egpj.exe", Content: []byte("x")}, 100, files.CodeInvalidFile, "name"},
		{"control in customer id", files.Upload{Name: "a.pdf", Content: []byte("x"), CustomerID: "C\n1"}, 100, files.CodeInvalidFile, "customerId"},
		{"unknown customer", files.Upload{Name: "a.pdf", Content: []byte("x"), CustomerID: "C-2"}, 100, customers.CodeNotFound, "customerId"},
		{"known customer", files.Upload{Name: "a.pdf", Content: []byte("x"), CustomerID: "C-1"}, 100, "", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				_, err := files.Add(ctx, tx, tt.f, tt.max, t0)
				return err
			})
			fe, _ := failure.As(err)
			switch {
			case tt.code == "" && err != nil:
				t.Errorf("Add = %v, want nil", err)
			case tt.code != "" && (fe == nil || fe.Code != tt.code || fe.Field != tt.field):
				t.Errorf("Add = %v, want %s on %s", err, tt.code, tt.field)
			}
		})
	}
	list, err := files.List(context.Background(), db)
	if err != nil || len(list) != 2 {
		t.Errorf("List = %d files, %v; want the one at the limit and the known customer's", len(list), err)
	}
}

func TestMediaType(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	for _, tt := range []struct {
		name    string
		content []byte
		want    string
	}{
		{"a.pdf", []byte("%PDF-1.4 ..."), "application/pdf"},
		{"a.PDF", []byte("%PDF-1.4 ..."), "application/pdf"},
		{"a.pdf", []byte("<html><script>alert(1)</script>"), "text/html; charset=utf-8"}, // the content wins
		{"a.png", png, "image/png"},
		{"a.pdf", png, "image/png"},
		{"a.csv", []byte("a,b\n1,2\n"), "text/csv; charset=utf-8"},
		{"a.txt", []byte("olá\n"), "text/plain; charset=utf-8"},
		{"a.json", []byte(`{"a":1}`), "application/json"},
		{"a.ofx", []byte("OFXHEADER:100\n"), "application/x-ofx"},
		{"a.ofx", []byte(`<?xml version="1.0"?><OFX></OFX>`), "application/x-ofx"},
		{"noext", []byte("plain"), "text/plain; charset=utf-8"},
		{"a.exe", []byte("MZ\x90\x00\x03"), "application/octet-stream"},
	} {
		if got := files.MediaType(tt.name, tt.content); got != tt.want {
			t.Errorf("MediaType(%q, %q) = %q, want %q", tt.name, tt.content, got, tt.want)
		}
	}
}

func TestDisposition(t *testing.T) {
	for name, want := range map[string]string{
		"boleto.pdf":         `attachment; filename="boleto.pdf"; filename*=UTF-8''boleto.pdf`,
		"Boleto março.pdf":   `attachment; filename="Boleto mar_o.pdf"; filename*=UTF-8''Boleto%20mar%C3%A7o.pdf`,
		`a"b\c;d.pdf`:        `attachment; filename="a_b_c;d.pdf"; filename*=UTF-8''a%22b%5Cc%3Bd.pdf`,
		"<script>x</script>": `attachment; filename="<script>x</script>"; filename*=UTF-8''%3Cscript%3Ex%3C%2Fscript%3E`,
	} {
		if got := files.Disposition(name); got != want {
			t.Errorf("Disposition(%q) = %s, want %s", name, got, want)
		}
	}
}

// TestCreateNatural: the same file and expiry instant give the same live
// link and no new row; another expiry, or the same after a revoke, a new
// one; an unknown file is file_not_found.
func TestCreateNatural(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		ctx := context.Background()
		links := newLinks(t)
		f := add(t, db, files.Upload{Name: "a.pdf", Content: []byte("%PDF-1.4"), CreatedBy: "ana"})
		create := func(fileID string, exp time.Time, now time.Time) (files.Created, error) {
			var c files.Created
			err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
				var err error
				c, err = links.Create(ctx, tx, fileID, exp, "alice", "ledger-copilot", now)
				return err
			})
			return c, err
		}
		exp := t0.Add(48 * time.Hour)
		first, err := create(f.ID, exp, t0)
		if err != nil || !first.New || !files.ValidLinkID(first.Link.ID) || !first.Link.ExpiresAt.Equal(exp) {
			t.Fatalf("first Create = %+v, %v", first, err)
		}
		// The same instant written in another zone.
		second, err := create(f.ID, exp.In(time.FixedZone("BRT", -3*3600)), t0.Add(time.Hour))
		if err != nil || second.New || second.Link.ID != first.Link.ID || second.URL != first.URL {
			t.Errorf("second Create = %+v, %v; want the first link, not new", second, err)
		}
		if n := countLinks(t, db); n != 1 {
			t.Errorf("%d links after two calls, want 1", n)
		}
		other, err := create(f.ID, exp.Add(time.Second), t0)
		if err != nil || !other.New || other.Link.ID == first.Link.ID {
			t.Errorf("Create(other expiry) = %+v, %v; want a new link", other, err)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := files.Revoke(ctx, tx, first.Link.ID, "ops", t0.Add(2*time.Hour))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		again, err := create(f.ID, exp, t0.Add(3*time.Hour))
		if err != nil || !again.New || again.Link.ID == first.Link.ID {
			t.Errorf("Create after revoke = %+v, %v; want a new link", again, err)
		}
		if _, err := create("f_"+strings.Repeat("b", 26), exp, t0); !errors.Is(err, files.ErrFileNotFound) {
			t.Errorf("Create(unknown file) = %v, want file_not_found", err)
		}
		l, err := files.GetLink(ctx, db, first.Link.ID)
		if err != nil || !l.Revoked() || l.RevokedBy != "ops" || !l.RevokedAt.Equal(t0.Add(2*time.Hour)) {
			t.Errorf("revoked link = %+v, %v", l, err)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := files.Revoke(ctx, tx, first.Link.ID, "ops", t0.Add(4*time.Hour))
			return err
		})
		if fe, _ := failure.As(err); fe == nil || fe.Code != files.CodeLinkRevoked {
			t.Errorf("second Revoke = %v, want link_revoked", err)
		}
		err = db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := files.Revoke(ctx, tx, "l_"+strings.Repeat("c", 26), "ops", t0)
			return err
		})
		if !errors.Is(err, files.ErrLinkNotFound) {
			t.Errorf("Revoke(unknown) = %v, want link_not_found", err)
		}
	})
}

// TestCreateConcurrent: calls racing for one (file, expiry) share one link.
func TestCreateConcurrent(t *testing.T) {
	storetest.Each(t, pg, func(t *testing.T, db store.DB) {
		links := newLinks(t)
		f := add(t, db, files.Upload{Name: "a.pdf", Content: []byte("%PDF-1.4"), CreatedBy: "ana"})
		exp := t0.Add(24 * time.Hour)
		const n = 16
		ids := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
					c, err := links.Create(ctx, tx, f.ID, exp, "alice", "", t0)
					ids[i] = c.Link.ID
					return err
				})
				if err != nil {
					t.Errorf("Create: %v", err)
				}
			})
		}
		wg.Wait()
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("racing calls made links %v, want one", ids)
			}
		}
		if c := countLinks(t, db); c != 1 {
			t.Errorf("%d links, want 1", c)
		}
	})
}

func countLinks(t *testing.T, db store.DB) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM file_link`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fileWithLink stores a small file and makes a link to it, valid for an hour
// from t0.
func fileWithLink(t *testing.T, db store.DB) (files.File, files.Created) {
	t.Helper()
	f := add(t, db, files.Upload{Name: "a.pdf", Content: []byte("%PDF-1.4"), CreatedBy: "ana"})
	var c files.Created
	err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
		var err error
		c, err = newLinks(t).Create(ctx, tx, f.ID, t0.Add(time.Hour), "alice", "", t0)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// TestServingRoleCannotChangeFiles: the serving role adds files and revokes
// links, and can change nothing else.
func TestServingRoleCannotChangeFiles(t *testing.T) {
	db := storetest.AppRole(t, pg)
	ctx := context.Background()
	f, c := fileWithLink(t, db)
	for _, sql := range []string{
		`UPDATE file_chunk SET data = '\x00' WHERE file_id = $1`,
		`DELETE FROM file_chunk WHERE file_id = $1`,
		`UPDATE file SET name = 'x' WHERE id = $1`,
		`DELETE FROM file WHERE id = $1`,
		`UPDATE file_link SET expires_at = expires_at + 1 WHERE file_id = $1`,
		`DELETE FROM file_link WHERE file_id = $1`,
	} {
		if _, err := db.Exec(ctx, sql, f.ID); err == nil || !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("%s as the serving role: %v, want permission denied", sql, err)
		}
	}
	if _, err := db.Exec(ctx, `UPDATE file_link SET revoked_at = 1, revoked_by = 'ops' WHERE id = $1`, c.Link.ID); err != nil {
		t.Errorf("revoking as the serving role: %v", err)
	}
}

// TestRevokeRace: of two revokes racing on PostgreSQL, the loser (its read
// before the winner's commit, its update after) names the winner and when.
// SQLite runs one writer at a time: there, the second revoke starts after
// the first committed (TestCreateNatural's second Revoke).
func TestRevokeRace(t *testing.T) {
	db := storetest.AppRole(t, pg)
	ctx := context.Background()
	_, c := fileWithLink(t, db)
	held, release := make(chan struct{}), make(chan struct{})
	winner := make(chan error, 1)
	go func() {
		winner <- db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			_, err := files.Revoke(ctx, tx, c.Link.ID, "ops-1", t0.Add(time.Minute))
			close(held)
			<-release // commit once the loser waits on the row
			return err
		})
	}()
	<-held
	go func() {
		defer close(release)
		for range 500 {
			var waiting int64
			if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`).Scan(&waiting); err != nil {
				t.Error(err)
				return
			}
			if waiting > 0 {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Error("the second revoke never waited on the first")
	}()
	err := db.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		_, err := files.Revoke(ctx, tx, c.Link.ID, "ops-2", t0.Add(2*time.Minute))
		return err
	})
	if werr := <-winner; werr != nil {
		t.Fatalf("first revoke: %v", werr)
	}
	fe, _ := failure.As(err)
	if want := "was already revoked on 2025-12-24T09:31:00Z by ops-1"; fe == nil || fe.Code != files.CodeLinkRevoked || fe.Message != want {
		t.Errorf("losing revoke = %v, want link_revoked: %s", err, want)
	}
}
