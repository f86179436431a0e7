package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/config"
	"github.com/cobranca/cobranca/internal/files"
	"github.com/cobranca/cobranca/internal/outbox"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/reqstate"
)

// servedTools are the tools this binary serves, contract and logic. set are
// the collections tools' settings; links signs download links, and mail is
// the outbox send_reminder enqueues in; nil lists the contracts only (a
// pipeline refuses the tools without them).
func servedTools(set collections.Settings, links *files.Links, mail *outbox.Outbox) ([]pipeline.Tool, error) {
	tools, err := collections.Tools(set)
	if err != nil {
		return nil, err
	}
	sendTools, err := collections.SendTools(set, mail)
	if err != nil {
		return nil, err
	}
	tools = append(tools, sendTools...)
	fileTools, err := files.Tools(links)
	if err != nil {
		return nil, err
	}
	tools = append(tools, fileTools...)
	// The conformance suite's diagnostic tools, in a build with -tags
	// conformance (diagnostics_conformance.go); none in production.
	more, err := diagnosticTools()
	if err != nil {
		return nil, err
	}
	return append(tools, more...), nil
}

// collectionSettings are the collections tools' settings of cfg.
func collectionSettings(cfg settings) collections.Settings {
	return collections.Settings{ContactPacing: cfg.ContactPacing, LedgerRequired: cfg.LedgerRequired, Pix: cfg.pix}
}

// requestStateRing is the key ring of request states: COBRANCA_REQUEST_STATE_KEYS,
// or in development one key kept in the data directory.
func requestStateRing(cfg config.Config) (*reqstate.Ring, error) {
	return keyRing(cfg, config.VarStateKeys, cfg.RequestStateKeys, "request-state.key")
}

// productTools are the tools the server serves, with the download links
// of its configuration: their contracts, for the commands that read them
// (no outbox: nothing here sends).
func productTools(cfg settings) ([]pipeline.Tool, error) {
	links, err := downloadLinks(cfg.Config)
	if err != nil {
		return nil, err
	}
	return servedTools(collectionSettings(cfg), links, nil)
}

// downloadLinks signs download links under COBRANCA_LINK_KEYS (in
// development one key kept in the data directory), pointing at
// COBRANCA_PUBLIC_URL (in development the server's own URL).
func downloadLinks(cfg config.Config) (*files.Links, error) {
	ring, err := keyRing(cfg, config.VarLinkKeys, cfg.LinkKeys, "link.key")
	if err != nil {
		return nil, err
	}
	return files.NewLinks(ring, cfg.Public())
}

// keyRing is the HMAC key ring a variable names as written ("id:secret"
// entries separated by commas, the current key first; the rules on ids and
// secrets are reqstate.NewRing's), or, when it is empty (development: config
// refuses that in production), one key kept in devFile in the data
// directory.
func keyRing(cfg config.Config, variable, value, devFile string) (*reqstate.Ring, error) {
	if value == "" {
		secret, err := auditlog.LoadOrCreateDigestKey(filepath.Join(cfg.DataDir, devFile))
		if err != nil {
			return nil, fmt.Errorf("%s: development key: %w", variable, err)
		}
		return reqstate.NewRing(reqstate.Key{ID: "dev", Secret: secret})
	}
	keys, err := parseKeys(value)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", variable, err)
	}
	ring, err := reqstate.NewRing(keys[0], keys[1:]...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", variable, err)
	}
	return ring, nil
}

// parseKeys reads "id:secret" entries separated by commas.
func parseKeys(v string) ([]reqstate.Key, error) {
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
