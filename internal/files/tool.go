package files

import (
	"context"
	"strconv"
	"time"

	"github.com/cobranca/cobranca/internal/contract"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/timestamp"
	"github.com/google/jsonschema-go/jsonschema"
)

// CreateLinkName is the name of the download-link tool.
const CreateLinkName = "files.create_download_link"

// Tools returns the files tools, contract and logic. links signs the URLs;
// without it (nil: `cobranca contracts`, which holds no keys) the tools
// have no Execute, and a pipeline refuses to serve them.
func Tools(links *Links) ([]pipeline.Tool, error) {
	c, err := contract.Finish(createLinkContract())
	if err != nil {
		return nil, err
	}
	t := pipeline.Tool{Contract: c, Decode: pipeline.Strict[createLinkArgs]()}
	if links != nil {
		t.Execute = links.createLink
	}
	return []pipeline.Tool{t}, nil
}

// createLinkArgs are the tool's arguments (idempotencyKey is the
// pipeline's).
type createLinkArgs struct {
	FileID    string `json:"fileId"`
	ExpiresAt string `json:"expiresAt"`
}

// createLinkResult is the tool's answer.
type createLinkResult struct {
	LinkID    string `json:"linkId"`
	URL       string `json:"url"`
	ExpiresAt string `json:"expiresAt"`
	Created   bool   `json:"created"`
}

// maxExpiresAtLen bounds expiresAt: an RFC 3339 date-time with nanoseconds
// and an offset is 35 characters.
const maxExpiresAtLen = 40

var fileIDPattern = ident.Pattern(filePrefix)

func createLinkContract() contract.Contract {
	str := func(desc string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: desc} }
	maxExp := maxExpiresAtLen
	expires := str("When the link stops working: an RFC 3339 date-time in whole seconds (2025-12-31T23:59:00Z, or with an offset from -23:59 to +23:59), after now and at most 7 days ahead. The same instant written with another offset is the same expiry.")
	expires.Format, expires.MaxLength = "date-time", &maxExp
	fileID := str("The stored file's id (f_…), as `cobranca files list` shows it.")
	fileID.Pattern = fileIDPattern
	out := func() map[string]*jsonschema.Schema {
		linkID := str("The link's id (l_…): an operator revokes it with `cobranca files revoke`.")
		linkID.Pattern = ident.Pattern(linkPrefix)
		url := str("The signed download URL. It is a credential: whoever holds it downloads the file until expiresAt or a revoke. Give it only to its recipient; never log it.")
		url.Format = "uri"
		exp := str("The link's expiry, RFC 3339 in UTC.")
		exp.Format = "date-time"
		return map[string]*jsonschema.Schema{
			"linkId": linkID, "url": url, "expiresAt": exp,
			"created": {Type: "boolean", Description: "true when this call made the link; false when a valid link for the same file and expiry already existed and is returned."},
		}
	}
	closed := &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return contract.Contract{
		Name:            CreateLinkName,
		ContractVersion: "1.0.0",
		Title:           "Create a download link for a stored file",
		Description: "Use when a customer needs a document an operator stored (an invoice PDF, a boleto, a statement): " +
			"returns a signed URL that downloads that one file until expiresAt (at most 7 days ahead). " +
			"Asking again for the same file and expiry while that link is valid returns the same link; it never sends anything to anyone.",
		Category:  "files",
		RiskLevel: contract.Medium,
		InputSchema: &jsonschema.Schema{
			Type:                 "object",
			Properties:           map[string]*jsonschema.Schema{"fileId": fileID, "expiresAt": expires},
			Required:             []string{"fileId", "expiresAt"},
			AdditionalProperties: closed,
		},
		OutputSchema: &jsonschema.Schema{
			Type:                 "object",
			Properties:           out(),
			Required:             []string{"linkId", "url", "expiresAt", "created"},
			AdditionalProperties: closed,
		},
		Permissions: []string{"files:share"},
		SideEffects: contract.SideEffects{
			Changes: []string{"Records a download link for the file (file, expiry, who asked, when). Anyone holding its URL can download the file until it expires or an operator revokes it."},
			OnRepeat: "The same fileId and expiresAt instant while that link is valid (not expired, not revoked) return the same linkId and url and record nothing (created: false). " +
				"Once it expired, that expiresAt is in the past and refused (invalid_arguments): a call naming a new expiresAt gets a new link. After a revoke, the same fileId and expiresAt give a new link. " +
				"With an idempotencyKey, a repeat runs again and answers as above: the answer, which holds the URL, is not stored under the key.",
		},
		AuditEvent: "files.link.created",
		FailureModes: []contract.FailureMode{
			{Code: failure.InvalidArguments, Meaning: "An argument does not match the input schema, or expiresAt is not a real RFC 3339 date-time in whole seconds with an offset from -23:59 to +23:59, not after now, or more than 7 days ahead; field names it."},
			{Code: CodeFileNotFound, Meaning: "No stored file has this fileId; nothing was done."},
		},
		Idempotency: contract.Idempotency{Kind: "natural", Description: "The same fileId and expiresAt instant give the same link while it is valid (a partial unique index keeps it so under concurrency); idempotencyKey is optional."},
		DryRun:      contract.ModeNone,
	}
}

// parseExpiry reads and checks a link's expiry as the tool takes it: RFC
// 3339, whole seconds, after now and at most MaxLinkLifetime ahead; a
// refusal is invalid_arguments naming field.
func parseExpiry(field, s string, now time.Time) (time.Time, error) {
	bad := func(msg string) (time.Time, error) {
		return time.Time{}, &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	t, err := timestamp.Parse(s)
	if err != nil || len(s) > maxExpiresAtLen {
		return bad("must be an RFC 3339 date-time, like 2025-12-31T23:59:00Z (an offset from -23:59 to +23:59)")
	}
	if t.Nanosecond() != 0 {
		return bad("must be in whole seconds")
	}
	if !t.After(now) {
		return bad("must be in the future")
	}
	if t.Sub(now) > MaxLinkLifetime {
		return bad("must be at most " + strconv.Itoa(int(MaxLinkLifetime/time.Hour/24)) + " days ahead")
	}
	return t.UTC(), nil
}

// createLink is the tool's Execute.
func (s *Links) createLink(ctx context.Context, tx store.Tx, v any) (pipeline.Effect, error) {
	a := v.(*createLinkArgs)
	now := pipeline.Now(ctx)
	exp, err := parseExpiry("expiresAt", a.ExpiresAt, now)
	if err != nil {
		return pipeline.Effect{}, err
	}
	var by, actor string
	if pr := pipeline.PrincipalFrom(ctx); pr != nil {
		by, actor = pr.Subject, pr.Actor
	}
	c, err := s.Create(ctx, tx, a.FileID, exp, by, actor, now)
	if err != nil {
		return pipeline.Effect{}, err
	}
	eff := pipeline.Effect{
		Structured: createLinkResult{LinkID: c.Link.ID, URL: c.URL, ExpiresAt: c.Link.ExpiresAt.Format(time.RFC3339), Created: c.New},
		Summary:    "Created a download link; its URL is in the structured result.",
		Details:    map[string]int64{"linksCreated": 1},
	}
	if !c.New {
		eff.Summary, eff.Unchanged, eff.Details = "Returned the download link that already existed for this file and expiry; its URL is in the structured result.", true, map[string]int64{"linksCreated": 0}
	}
	return eff, nil
}
