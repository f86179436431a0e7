//go:build !conformance

package main

import (
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
)

// diagnosticTools: a production build serves no diagnostic tool and links
// no part of internal/diagnostics (TestDiagnosticsOnlyWithTag, whose files
// all carry the conformance tag, so that it could not even be imported
// here).
func diagnosticTools() ([]pipeline.Tool, error) { return nil, nil }

// diagnosticResources: a production build serves no fixture resource.
func diagnosticResources() []mcpapi.Resource { return nil }

// diagnosticPrompts: a production build serves no prompt.
func diagnosticPrompts() []string { return nil }

// diagnosticsBuilt: this build serves no diagnostic tool.
const diagnosticsBuilt = false
