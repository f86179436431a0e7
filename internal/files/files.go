// Package files keeps the documents operators attach to collections
// (invoice PDFs, boletos, statements) and the signed, expiring, revocable
// links through which customers download them.
//
// A file's content lives in the store, so that every replica serves every
// link; it is written once (`cobranca files add`) and never changed. A link
// is a row (who made it, until when, whether and by whom it was revoked)
// and a URL that carries its own proof: an HMAC-SHA256 under the link key
// ring (COBRANCA_LINK_KEYS) over the link id, the file id and the expiry,
// with the key's id for rotation. The URL is a bearer credential: it goes
// to whoever asked for the link and nowhere else — never to a log, an
// audit event or the store.
package files

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/customers"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ident"
	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/value"
)

// Failure codes of this package, each listed with its meaning in the
// contracts and docs/tools.md.
const (
	CodeFileNotFound  failure.Code = "file_not_found" // no stored file has the id
	CodeLinkNotFound  failure.Code = "link_not_found" // no link has the id (CLI)
	CodeFileTooLarge  failure.Code = "file_too_large" // over COBRANCA_MAX_FILE_BYTES
	CodeInvalidFile   failure.Code = "invalid_file"   // a name or customer id the rules refuse
	CodeLinkRevoked   failure.Code = "link_revoked"   // the link was revoked (download; revoking twice)
	CodeLinkExpired   failure.Code = "link_expired"   // the link's expiry has passed
	CodeLinkSignature failure.Code = "link_signature_invalid"
)

// DefaultMaxBytes is COBRANCA_MAX_FILE_BYTES's default: 20 MiB.
const DefaultMaxBytes = 20 << 20

// Prefixes of the ids this package makes.
const (
	filePrefix = "f_"
	linkPrefix = "l_"
)

// ValidFileID and ValidLinkID report whether s is spelled as a file id
// (f_…) or a link id (l_…) is; whether one exists is the store's to say.
func ValidFileID(s string) bool { return ident.Valid(filePrefix, s) }

// ValidLinkID: see ValidFileID.
func ValidLinkID(s string) bool { return ident.Valid(linkPrefix, s) }

// File is a stored file, without its content.
type File struct {
	ID         string
	Name       string
	MediaType  string
	Size       int64
	SHA256     [sha256.Size]byte
	CustomerID string // "" when the file belongs to no customer
	CreatedBy  string
	CreatedAt  time.Time
}

// Upload is a file to add.
type Upload struct {
	// Name is the file's base name as the operator gave it (a path is
	// reduced to its last element): shown in listings and offered as the
	// download's file name.
	Name       string
	Content    []byte
	CustomerID string // optional
	CreatedBy  string // the operator
}

// Add stores f in tx and returns it. It refuses, with a *failure.Error
// naming the field, content over maxBytes (file_too_large), a name or
// customer id the text rule of ids and names refuses (invalid_file), and a
// customer id no customer has (customer_not_found).
func Add(ctx context.Context, tx store.Tx, f Upload, maxBytes int64, now time.Time) (File, error) {
	name := path.Base(filepath.ToSlash(f.Name))
	if msg := value.TextProblem(name); msg != "" || name == "." || name == ".." {
		if msg == "" {
			msg = "must name a file"
		}
		return File{}, &failure.Error{Code: CodeInvalidFile, Field: "name", Message: msg}
	}
	if int64(len(f.Content)) > maxBytes {
		return File{}, tooLarge(maxBytes)
	}
	if f.CustomerID != "" {
		if msg := customers.IDProblem(f.CustomerID); msg != "" {
			return File{}, &failure.Error{Code: CodeInvalidFile, Field: "customerId", Message: msg}
		}
		if _, err := customers.Get(ctx, tx, f.CustomerID); errors.Is(err, customers.ErrNotFound) {
			return File{}, &failure.Error{Code: customers.CodeNotFound, Field: "customerId", Message: "no customer has this id (cobranca customers import adds customers)"}
		} else if err != nil {
			return File{}, fmt.Errorf("files: add: %w", err)
		}
	}
	out := File{
		ID: ident.New(filePrefix), Name: name, MediaType: MediaType(name, f.Content), Size: int64(len(f.Content)),
		SHA256: sha256.Sum256(f.Content), CustomerID: f.CustomerID, CreatedBy: f.CreatedBy,
		CreatedAt: time.UnixMicro(now.UnixMicro()).UTC(),
	}
	var customer any // NULL when none
	if out.CustomerID != "" {
		customer = out.CustomerID
	}
	_, err := tx.Exec(ctx, `INSERT INTO file (id, name, media_type, size_bytes, sha256, customer_id, created_by, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		out.ID, out.Name, out.MediaType, out.Size, out.SHA256[:], customer, out.CreatedBy, out.CreatedAt.UnixMicro())
	if err != nil {
		return File{}, fmt.Errorf("files: add: %w", err)
	}
	for seq, rest := int64(0), f.Content; len(rest) > 0; seq++ {
		n := min(ChunkSize, len(rest))
		if _, err := tx.Exec(ctx, `INSERT INTO file_chunk (file_id, seq, data) VALUES ($1, $2, $3)`, out.ID, seq, rest[:n]); err != nil {
			return File{}, fmt.Errorf("files: add: content: %w", err)
		}
		rest = rest[n:]
	}
	return out, nil
}

func tooLarge(maxBytes int64) *failure.Error {
	return &failure.Error{Code: CodeFileTooLarge, Field: "content",
		Message: fmt.Sprintf("is larger than %d bytes (COBRANCA_MAX_FILE_BYTES)", maxBytes)}
}

// CheckSize refuses a size over maxBytes as Add does, for a reader that
// must stop before it reads it all.
func CheckSize(size, maxBytes int64) error {
	if size > maxBytes {
		return tooLarge(maxBytes)
	}
	return nil
}

const fileColumns = `id, name, media_type, size_bytes, sha256, coalesce(customer_id, ''), created_by, created_at`

func scanFile(r store.Row) (File, error) {
	var f File
	var sum []byte
	var created int64
	if err := r.Scan(&f.ID, &f.Name, &f.MediaType, &f.Size, &sum, &f.CustomerID, &f.CreatedBy, &created); err != nil {
		return File{}, err
	}
	if len(sum) != sha256.Size {
		return File{}, errors.New("files: stored digest is not SHA-256")
	}
	copy(f.SHA256[:], sum)
	f.CreatedAt = time.UnixMicro(created).UTC()
	return f, nil
}

// ErrFileNotFound is returned by Get for an id no file has.
var ErrFileNotFound = &failure.Error{Code: CodeFileNotFound, Field: "fileId", Message: "no stored file has this id"}

// Get returns the file id names, without its content, or ErrFileNotFound.
func Get(ctx context.Context, q store.Querier, id string) (File, error) {
	return byID(ctx, q, id, ValidFileID, ErrFileNotFound, scanFile, `SELECT `+fileColumns+` FROM file WHERE id = $1`)
}

// byID reads the row of id with sql ($1 is the id) and scan: notFound
// for an id that valid refuses or no row has.
func byID[T any](ctx context.Context, q store.Querier, id string, valid func(string) bool, notFound error, scan func(store.Row) (T, error), sql string) (T, error) {
	var zero T
	if !valid(id) {
		return zero, notFound
	}
	v, err := scan(q.QueryRow(ctx, sql, id))
	if errors.Is(err, store.ErrNoRows) {
		return zero, notFound
	}
	if err != nil {
		return zero, fmt.Errorf("files: read %s: %w", id, err)
	}
	return v, nil
}

// List returns every stored file, oldest first, without content.
func List(ctx context.Context, q store.Querier) ([]File, error) {
	rows, err := q.Query(ctx, `SELECT `+fileColumns+` FROM file ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("files: list: %w", err)
	}
	defer rows.Close()
	var out []File
	for rows.Next() {
		f, err := scanFile(rows)
		if err != nil {
			return nil, fmt.Errorf("files: list: %w", err)
		}
		out = append(out, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("files: list: %w", err)
	}
	return out, nil
}

// ChunkSize is the size of the pieces a file's content is stored in (the
// last one shorter): a download reads one piece per query and holds no
// more than one in memory.
const ChunkSize = 1 << 20

// ReadChunk returns piece seq (0 based) of file id's content: ChunkSize
// bytes, fewer for the last piece; store.ErrNoRows past the end.
func ReadChunk(ctx context.Context, q store.Querier, id string, seq int64) ([]byte, error) {
	var b []byte
	if err := q.QueryRow(ctx, `SELECT data FROM file_chunk WHERE file_id = $1 AND seq = $2`, id, seq).Scan(&b); err != nil {
		return nil, fmt.Errorf("files: read: %w", err)
	}
	return b, nil
}

// extTypes are the media types of the extensions documents come with: a
// fixed table, not the system's mime.types, so that a file gets one type
// wherever it is added.
var extTypes = map[string]string{
	".pdf":  "application/pdf",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".jpeg": "image/jpeg",
	".gif":  "image/gif",
	".webp": "image/webp",
	".txt":  "text/plain",
	".csv":  "text/csv",
	".xml":  "text/xml",
	".ofx":  "application/x-ofx",
	".zip":  "application/zip",
	".json": "application/json",
}

// MediaType is the media type of a file named name holding content: the
// type http.DetectContentType sniffs from the content, made more precise by
// the extension's type where the two agree — the same type (a .pdf that is
// a PDF), or text the sniffer cannot tell apart (a .csv or .xml sniffed as
// plain text keeps the sniffed charset), or a .ofx or .json sniffed as
// text. Where they disagree the content wins: a .pdf holding HTML is
// text/html, never application/pdf (and downloads are attachments with
// nosniff whatever the type).
func MediaType(name string, content []byte) string {
	sniffed := http.DetectContentType(content)
	ext, ok := extTypes[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return sniffed
	}
	base, params, err := mime.ParseMediaType(sniffed)
	if err != nil {
		return sniffed
	}
	switch {
	case base == ext:
		return sniffed
	case base == "text/plain" && (strings.HasPrefix(ext, "text/") || ext == "application/json" || ext == "application/x-ofx"):
		if cs := params["charset"]; cs != "" && strings.HasPrefix(ext, "text/") {
			return mime.FormatMediaType(ext, map[string]string{"charset": cs})
		}
		return ext
	case base == "text/xml" && ext == "application/x-ofx": // OFX 2 is XML
		return ext
	}
	return sniffed
}
