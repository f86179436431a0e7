package main

import (
	"context"
	"encoding/json"
	"flag"

	"github.com/cobranca/cobranca/internal/mcpapi"
)

func printContracts(_ context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("contracts", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, err := mcpapi.New(mcpapi.Options{})
	if err != nil {
		return err
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"contracts": h.Contracts()})
}
