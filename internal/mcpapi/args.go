package mcpapi

import (
	"encoding/json"

	"github.com/cobranca/cobranca/internal/pipeline"
)

// Decoder is the pipeline's: a tool's argument decoder.
type Decoder = pipeline.Decoder

// callArgs are one call's arguments as the scanner read them: as sent, and
// what the tool's Decoder made of them when the scanner ran it (decoded).
type callArgs struct {
	raw     json.RawMessage
	decoded bool
	value   any
	err     error
}
