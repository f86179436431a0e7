//go:build conformance

package main

import (
	"github.com/cobranca/cobranca/internal/diagnostics"
	"github.com/cobranca/cobranca/internal/mcpapi"
	"github.com/cobranca/cobranca/internal/pipeline"
)

// diagnosticTools are the official MCP conformance suite's diagnostic tools
// (internal/diagnostics), served besides the product's by a build with
// -tags conformance, which .ci/run builds and runs the suite against.
func diagnosticTools() ([]pipeline.Tool, error) { return diagnostics.Tools() }

// diagnosticPrompts are the diagnostic tools also served as prompts.
func diagnosticPrompts() []string { return diagnostics.Prompts }

// diagnosticResources are the suite's resource fixtures.
func diagnosticResources() []mcpapi.Resource { return diagnostics.Resources() }

// diagnosticsBuilt: this build serves the diagnostic tools.
const diagnosticsBuilt = true
