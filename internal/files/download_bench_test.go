package files_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// discardAudit records nothing: the benchmark measures reading the file.
type discardAudit struct{}

func (discardAudit) Record(context.Context, auditlog.Event) error { return nil }

// bodyCounter is a ResponseWriter that keeps no body, only its size.
type bodyCounter struct {
	h http.Header
	n int64
}

func (w *bodyCounter) Header() http.Header         { return w.h }
func (w *bodyCounter) WriteHeader(int)             {}
func (w *bodyCounter) Write(b []byte) (int, error) { w.n += int64(len(b)); return len(b), nil }

var _ io.Writer = (*bodyCounter)(nil)

// BenchmarkDownload8MiB serves one download of an 8 MiB file through the
// handler (signature, store checks, the content read in chunks), on each
// store; the audit write is left out.
func BenchmarkDownload8MiB(b *testing.B) {
	for _, fx := range storetest.Fixtures(pg) {
		b.Run(string(fx.Dialect), func(b *testing.B) {
			db := fx.Serving(b)
			content := randomBytes(8 << 20)
			f := add(b, db, files.Upload{Name: "a.pdf", Content: content, CreatedBy: "ana"})
			links := newLinks(b)
			var c files.Created
			err := db.InTx(context.Background(), func(ctx context.Context, tx store.Tx) error {
				var err error
				c, err = links.Create(ctx, tx, f.ID, t0.Add(time.Hour), "alice", "", t0)
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			d := &files.Downloads{DB: db, Links: links, Audit: discardAudit{}, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return t0 }}
			mux := http.NewServeMux()
			mux.Handle(files.DownloadPattern, d)
			handler := http.StripPrefix("/base", mux) // newLinks' public URL has a path prefix
			req := httptest.NewRequest(http.MethodGet, c.URL, nil)
			b.ReportAllocs()
			b.SetBytes(int64(len(content)))
			for b.Loop() {
				w := &bodyCounter{h: http.Header{}}
				handler.ServeHTTP(w, req)
				if w.n != int64(len(content)) {
					b.Fatalf("served %d bytes, want %d", w.n, len(content))
				}
			}
		})
	}
}
