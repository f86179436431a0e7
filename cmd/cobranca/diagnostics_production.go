//go:build !conformance

package main

import "github.com/cobranca/cobranca/internal/pipeline"

// diagnosticTools: a production build serves no diagnostic tool and links
// no part of internal/diagnostics (TestProductionHasNoDiagnostics).
func diagnosticTools() ([]pipeline.Tool, error) { return nil, nil }
