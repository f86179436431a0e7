package main

// docs/tools.md's reference and README.md's tools at a glance are made from
// the contracts (toolsdoc_test.go).
//go:generate go test -run ^TestToolsDoc$ -update .

import (
	"context"
	"encoding/json"
	"github.com/cobranca/cobranca/internal/collections"

	"github.com/cobranca/cobranca/internal/contract"
)

func printContracts(_ context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	tools, err := servedTools(collections.Settings{}, nil, nil)
	if err != nil {
		return err
	}
	// The contracts agents see: a forbidden tool is never listed.
	var contracts []*contract.Contract
	for _, t := range tools {
		if t.Contract.VisibleToAgents() {
			contracts = append(contracts, t.Contract)
		}
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"contracts": contracts})
}
