package main

import (
	"context"
	"encoding/json"

	"github.com/cobranca/cobranca/internal/mcpapi"
)

func printContracts(_ context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
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
