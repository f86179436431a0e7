package files

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/reqstate"
	"github.com/cobranca/cobranca/internal/store"
)

// MaxLinkLifetime is how far ahead a link may expire.
const MaxLinkLifetime = 7 * 24 * time.Hour

// Link is a download link, without its URL.
type Link struct {
	ID        string
	FileID    string
	ExpiresAt time.Time // whole seconds, UTC
	CreatedBy string    // the subject who asked for the link
	// CreatedByActor is the agent acting on CreatedBy's behalf; "" for a
	// person.
	CreatedByActor string
	CreatedAt      time.Time
	RevokedAt      time.Time // zero while not revoked
	RevokedBy      string
}

// Revoked reports whether the link was revoked.
func (l Link) Revoked() bool { return !l.RevokedAt.IsZero() }

// Valid reports whether the link downloads at now: not revoked, not expired.
func (l Link) Valid(now time.Time) bool { return !l.Revoked() && now.Before(l.ExpiresAt) }

// Links makes and checks download links: the signing keys and the public
// URL the links point at. It is immutable and safe for concurrent use.
type Links struct {
	keys *reqstate.Ring
	base string // scheme://host[/path], no trailing slash
}

// errPublicURL is the rule of the public URL links point at
// (COBRANCA_PUBLIC_URL), the one place it is written.
var errPublicURL = errors.New("must be an absolute http(s) URL with no user, query or fragment, like https://cobranca.example.com")

// CheckPublicURL checks publicURL as NewLinks takes it, for a
// configuration that reports it before it has the keys.
func CheckPublicURL(publicURL string) error {
	_, err := publicBase(publicURL)
	return err
}

// publicBase is publicURL, an absolute http(s) URL with no user, query or
// fragment, without its trailing slash.
func publicBase(publicURL string) (string, error) {
	u, err := url.Parse(publicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errPublicURL
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// NewLinks returns Links signing under keys (the current key signs, the
// others still verify) whose URLs start with publicURL, an absolute http or
// https URL with no user, query or fragment.
func NewLinks(keys *reqstate.Ring, publicURL string) (*Links, error) {
	base, err := publicBase(publicURL)
	if err != nil {
		return nil, fmt.Errorf("files: the public URL %w", err)
	}
	if keys == nil {
		return nil, errors.New("files: no link keys")
	}
	return &Links{keys: keys, base: base}, nil
}

// tagUse separates link signatures from every other use of the keys.
const tagUse = "cobranca/file-link/v1"

// The query parameters of a download URL.
const (
	paramLink    = "link"
	paramExpires = "exp"
	paramKey     = "kid"
	paramSig     = "sig"
)

var sigEncoding = base64.RawURLEncoding.Strict()

// signed is the canonical string a link's signature covers: the format's
// version, then the link id, the file id and the expiry in Unix seconds,
// one a line (ids hold no newline: ident.Valid).
func signed(linkID, fileID string, expires int64) []byte {
	return []byte("v1\n" + linkID + "\n" + fileID + "\n" + strconv.FormatInt(expires, 10))
}

// URL is l's download URL, signed under the current key: the same link
// always has the same URL while the current key stays.
func (s *Links) URL(l Link) string {
	exp := l.ExpiresAt.Unix()
	kid, tag := s.keys.Tag(tagUse, signed(l.ID, l.FileID, exp))
	q := url.Values{paramLink: {l.ID}, paramExpires: {strconv.FormatInt(exp, 10)}, paramKey: {kid}, paramSig: {sigEncoding.EncodeToString(tag)}}
	return s.base + "/files/" + l.FileID + "/download?" + q.Encode()
}

// Claim is what a download URL claims once its signature verified.
type Claim struct {
	LinkID, FileID string
	Expires        time.Time
}

// refused is a download refusal: a 403 with the code.
func refused(code failure.Code, msg string) *failure.Error {
	return &failure.Error{Code: code, Message: msg}
}

var errBadSignature = refused(CodeLinkSignature, "the link's signature does not verify: it was altered, or is not a link of this server")

// Verify checks the signature of a download URL's file id (from the path)
// and query, in constant time, and that it has not expired at now: the
// Claim, or a *failure.Error link_signature_invalid (no Claim) or
// link_expired (with the Claim the signature proves). It does not look at
// the store (revocation: see Check).
func (s *Links) Verify(fileID string, q url.Values, now time.Time) (Claim, error) {
	one := func(name string) string {
		if v := q[name]; len(v) == 1 {
			return v[0]
		}
		return ""
	}
	linkID, exp, kid, sig := one(paramLink), one(paramExpires), one(paramKey), one(paramSig)
	if !ValidFileID(fileID) || !ValidLinkID(linkID) || kid == "" {
		return Claim{}, errBadSignature
	}
	expires, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || expires <= 0 || strconv.FormatInt(expires, 10) != exp {
		return Claim{}, errBadSignature
	}
	tag, err := sigEncoding.DecodeString(sig)
	if err != nil {
		return Claim{}, errBadSignature
	}
	if err := s.keys.CheckTag(kid, tagUse, signed(linkID, fileID, expires), tag); err != nil {
		return Claim{}, errBadSignature
	}
	c := Claim{LinkID: linkID, FileID: fileID, Expires: time.Unix(expires, 0).UTC()}
	if !now.Before(c.Expires) {
		return c, refused(CodeLinkExpired, "the link has expired: ask for a new one")
	}
	return c, nil
}

const linkColumns = `id, file_id, expires_at, created_by, created_by_actor, created_at, coalesce(revoked_at, 0), coalesce(revoked_by, '')`

func scanLink(r store.Row) (Link, error) {
	var l Link
	var exp, created, revoked int64
	if err := r.Scan(&l.ID, &l.FileID, &exp, &l.CreatedBy, &l.CreatedByActor, &created, &revoked, &l.RevokedBy); err != nil {
		return Link{}, err
	}
	l.ExpiresAt, l.CreatedAt = time.UnixMicro(exp).UTC(), time.UnixMicro(created).UTC()
	if revoked != 0 {
		l.RevokedAt = time.UnixMicro(revoked).UTC()
	}
	return l, nil
}

// ErrLinkNotFound is returned for a link id no link has.
var ErrLinkNotFound = &failure.Error{Code: CodeLinkNotFound, Field: "linkId", Message: "no link has this id"}

// GetLink returns the link id names, or ErrLinkNotFound.
func GetLink(ctx context.Context, q store.Querier, id string) (Link, error) {
	return byID(ctx, q, id, ValidLinkID, ErrLinkNotFound, scanLink, `SELECT `+linkColumns+` FROM file_link WHERE id = $1`)
}

// Check is the store's half of a download's checks, after Verify: the link
// exists, belongs to the file and to the expiry the URL was signed with,
// and is not revoked. It returns the link and its file, or a refusal.
func Check(ctx context.Context, q store.Querier, c Claim) (Link, File, error) {
	l, err := GetLink(ctx, q, c.LinkID)
	if errors.Is(err, ErrLinkNotFound) {
		// Only a holder of the keys signs a link; one the store lacks was
		// signed against another database.
		return Link{}, File{}, errBadSignature
	}
	if err != nil {
		return Link{}, File{}, err
	}
	if l.FileID != c.FileID || !l.ExpiresAt.Equal(c.Expires) {
		return Link{}, File{}, errBadSignature
	}
	if l.Revoked() {
		return Link{}, File{}, refused(CodeLinkRevoked, "the link was revoked")
	}
	f, err := Get(ctx, q, l.FileID)
	if err != nil {
		return Link{}, File{}, err
	}
	return l, f, nil
}

// Created is the answer of Create.
type Created struct {
	Link Link
	URL  string
	// New: the link was made by this call; false when a live link for the
	// same file and expiry already existed and is returned instead.
	New bool
}

// Create returns the live link of file fileID expiring at expiresAt
// (truncated to the second), making it when there is none: natural
// idempotency — the same file and expiry instant give the same link while
// it is valid; a revoked or expired one is never returned. The partial
// unique index file_link_live keeps that true under concurrency: of two
// calls racing to make the link, the second finds the first's. It refuses
// an unknown file (file_not_found); the caller checks expiresAt's bounds.
func (s *Links) Create(ctx context.Context, tx store.Tx, fileID string, expiresAt time.Time, by, byActor string, now time.Time) (Created, error) {
	if _, err := Get(ctx, tx, fileID); err != nil {
		return Created{}, err
	}
	exp := expiresAt.Truncate(time.Second).UTC()
	l := Link{ID: ident.New(linkPrefix), FileID: fileID, ExpiresAt: exp, CreatedBy: by, CreatedByActor: byActor, CreatedAt: time.UnixMicro(now.UnixMicro()).UTC()}
	n, err := tx.Exec(ctx, `INSERT INTO file_link (id, file_id, expires_at, created_by, created_by_actor, created_at) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (file_id, expires_at) WHERE revoked_at IS NULL DO NOTHING`,
		l.ID, l.FileID, exp.UnixMicro(), l.CreatedBy, l.CreatedByActor, l.CreatedAt.UnixMicro())
	if err != nil {
		return Created{}, fmt.Errorf("files: create link: %w", err)
	}
	if n == 1 {
		return Created{Link: l, URL: s.URL(l), New: true}, nil
	}
	old, err := scanLink(tx.QueryRow(ctx, `SELECT `+linkColumns+` FROM file_link WHERE file_id = $1 AND expires_at = $2 AND revoked_at IS NULL`,
		fileID, exp.UnixMicro()))
	if err != nil {
		return Created{}, fmt.Errorf("files: create link: the live link: %w", err)
	}
	if !old.Valid(now) {
		// Expired, yet its expiry is the one asked for, which lies ahead:
		// the caller's clock went back. Refused rather than answered with a
		// link that does not download.
		return Created{}, fmt.Errorf("files: create link: the live link for this expiry has expired (clock skew)")
	}
	return Created{Link: old, URL: s.URL(old), New: false}, nil
}

// Revoke revokes link id, recording by and now: the revoked link, or
// ErrLinkNotFound, or link_revoked when it already was (nothing changed).
func Revoke(ctx context.Context, tx store.Tx, id, by string, now time.Time) (Link, error) {
	if !ValidLinkID(id) {
		return Link{}, ErrLinkNotFound
	}
	n, err := tx.Exec(ctx, `UPDATE file_link SET revoked_at = $2, revoked_by = $3 WHERE id = $1 AND revoked_at IS NULL`,
		id, now.UnixMicro(), by)
	if err != nil {
		return Link{}, fmt.Errorf("files: revoke: %w", err)
	}
	// Read after the update: when a concurrent revoke committed first, the
	// update waited for it and changed nothing, and this read, a statement
	// of its own, sees the winner's row.
	l, err := GetLink(ctx, tx, id)
	if err != nil {
		return Link{}, err
	}
	if n == 0 {
		return Link{}, &failure.Error{Code: CodeLinkRevoked, Field: "linkId", Message: "was already revoked on " + l.RevokedAt.Format(time.RFC3339) + " by " + l.RevokedBy}
	}
	return l, nil
}
