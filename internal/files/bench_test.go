package files_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/idempotency"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/pipeline/pipelinetest"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// storedLinks is how many links exist when the natural repeat is measured.
const storedLinks = 1000

// linkBench is files.create_download_link served by the product's pipeline, with audit, on
// one stored file.
type linkBench struct {
	p     *pipeline.Pipeline
	file  string
	fresh atomic.Int64 // links made after the stored ones
	n     atomic.Int64
}

func newLinkBench(b *testing.B, db store.DB) *linkBench {
	b.Helper()
	now := func() time.Time { return t0 }
	keys, err := idempotency.New(db.Dialect(), time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	tools, err := files.Tools(newLinks(b))
	if err != nil {
		b.Fatal(err)
	}
	lb := &linkBench{
		p:    pipelinetest.Product(b, pipeline.Options{Tools: tools, Now: now, DB: db, Keys: keys, Auditor: pipelinetest.Auditor(b, db)}),
		file: add(b, db, files.Upload{Name: "boleto.pdf", Content: []byte("%PDF-1.4 boleto"), CreatedBy: "ana"}).ID,
	}
	for i := range int64(storedLinks) {
		if err := lb.create(i, `"created":true`); err != nil {
			b.Fatal(err)
		}
	}
	return lb
}

// create asks, as an agent, for the link of the file expiring i seconds after an hour from now.
func (lb *linkBench) create(i int64, want string) error {
	exp := t0.Add(time.Hour + time.Duration(i)*time.Second).Format(time.RFC3339)
	args, _ := json.Marshal(map[string]string{"fileId": lb.file, "expiresAt": exp})
	res := lb.p.Do(context.Background(), pipeline.Call{Principal: agent, RequestID: "r1", Tool: files.CreateLinkName, Args: args})
	if res.Kind != pipeline.Complete {
		return fmt.Errorf("kind %d, %v", res.Kind, res.Err)
	}
	if !bytes.Contains(res.Structured, []byte(want)) {
		return fmt.Errorf("answer %s, want %s in it", res.Structured, want)
	}
	return nil
}

func linkCases(b *testing.B, db store.DB) []storetest.Case {
	lb := newLinkBench(b, db)
	return []storetest.Case{
		{Name: "create_download_link/new", Call: func() error { return lb.create(storedLinks+lb.fresh.Add(1), `"created":true`) }},
		{Name: "create_download_link/repeat", Call: func() error { return lb.create(lb.n.Add(1)%storedLinks, `"created":false`) }},
	}
}

// BenchmarkCreateDownloadLink measures a new link and the natural repeat of a stored one
// through pipeline.Do with storetest.Parallel, on SQLite and on PostgreSQL, against the
// yardstick in the same run. See docs/benchmarks.md, "Issue 12's tools".
func BenchmarkCreateDownloadLink(b *testing.B) { storetest.BenchCases(b, pg, linkCases) }

// BenchmarkCreateDownloadLinkRoundTrips counts their round trips on PostgreSQL.
func BenchmarkCreateDownloadLinkRoundTrips(b *testing.B) { storetest.BenchRoundTrips(b, pg, linkCases) }
