// Package pipelinetest builds pipelines for tests: the product's tools and
// the test's own, with a real request-state key ring.
package pipelinetest

import (
	"crypto/rand"
	"testing"

	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reqstate"
)

// Ring returns a request-state key ring with one fresh random key.
func Ring(t testing.TB) *reqstate.Ring {
	t.Helper()
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	r, err := reqstate.NewRing(reqstate.Key{ID: "test", Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Product returns a pipeline serving the product's tools and then
// opts.Tools, configured by opts; a ring from Ring when opts has none. The
// product's tools that need a store (reads of it, and every tool with side
// effects) are served only when opts has one (WithStore).
func Product(t testing.TB, opts pipeline.Options) *pipeline.Pipeline {
	t.Helper()
	return ProductWith(t, collections.Settings{}, opts)
}

// ProductWith is Product with the product's tools under the settings s (a PIX key, say).
func ProductWith(t testing.TB, s collections.Settings, opts pipeline.Options) *pipeline.Pipeline {
	t.Helper()
	all, err := collections.Tools(s)
	if err != nil {
		t.Fatal(err)
	}
	var tools []pipeline.Tool
	for _, tool := range all {
		if opts.DB != nil || tool.Read == nil && !tool.Contract.HasSideEffects() {
			tools = append(tools, tool)
		}
	}
	opts.Tools = append(tools, opts.Tools...)
	if opts.States == nil {
		opts.States = Ring(t)
	}
	p, err := pipeline.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
