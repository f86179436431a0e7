package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reqstate"
)

// servedTools are the tools this binary serves, contract and logic.
func servedTools() ([]pipeline.Tool, error) {
	tools, err := collections.Tools()
	if err != nil {
		return nil, err
	}
	// The conformance suite's diagnostic tools, in a build with -tags
	// conformance (diagnostics_conformance.go); none in production.
	more, err := diagnosticTools()
	if err != nil {
		return nil, err
	}
	return append(tools, more...), nil
}

// requestStateRing is the key ring of request states: COBRANCA_REQUEST_STATE_KEYS,
// or in development one key kept in the data directory.
func requestStateRing(cfg config.Config) (*reqstate.Ring, error) {
	if cfg.RequestStateKeys == "" {
		secret, err := auditlog.LoadOrCreateDigestKey(filepath.Join(cfg.DataDir, "request-state.key"))
		if err != nil {
			return nil, fmt.Errorf("%s: development key: %w", config.VarStateKeys, err)
		}
		return reqstate.NewRing(reqstate.Key{ID: "dev", Secret: secret})
	}
	keys, err := parseStateKeys(cfg.RequestStateKeys)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.VarStateKeys, err)
	}
	ring, err := reqstate.NewRing(keys[0], keys[1:]...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.VarStateKeys, err)
	}
	return ring, nil
}

// parseStateKeys reads "id:secret" entries separated by commas; the rules
// on ids and secrets are reqstate's (NewRing).
func parseStateKeys(v string) ([]reqstate.Key, error) {
	var keys []reqstate.Key
	for i, entry := range strings.Split(v, ",") {
		id, secret, ok := strings.Cut(strings.TrimSpace(entry), ":")
		if !ok || id == "" || secret == "" {
			return nil, fmt.Errorf("entry %d: must be id:secret", i+1)
		}
		keys = append(keys, reqstate.Key{ID: id, Secret: []byte(secret)})
	}
	if len(keys) == 0 {
		return nil, errors.New("no key")
	}
	return keys, nil
}
