package files

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/store"
)

// DownloadEvent is the audit event of a download, served or refused.
const DownloadEvent = "files.link.downloaded"

// Auditor writes a standalone audit event (auditlog.Log.Record).
type Auditor interface {
	Record(ctx context.Context, ev auditlog.Event) error
}

// Refusals counts refusals for the audit log in bounded numbers (auditlog.Refusals: one event
// per class and client a minute, with the count).
type Refusals interface {
	Refused(r *http.Request, ev auditlog.Event)
}

// Downloads serves GET and HEAD /files/{id}/download for signed links.
type Downloads struct {
	DB    store.DB
	Links *Links
	Audit Auditor // required: a download that cannot be audited is not served
	// Refusals, when set, audits every refused link (forged, expired, revoked) in bounded
	// counts, so that a flood of them cannot fill the log; nil: a refused link of this server
	// is audited per request (Audit), a forged one not at all.
	Refusals Refusals
	Logger   *slog.Logger
	Now      func() time.Time // default time.Now

	// Idle is the longest a download waits for the client to take the next
	// piece of the body (default DefaultIdle); MinRate, in bytes per second,
	// is the slowest client served to the end (default DefaultMinRate). The
	// server's write timeout is replaced by these for the body: a file
	// within COBRANCA_MAX_FILE_BYTES downloads over a slow link, and a
	// stalled or crawling client still lets its connection go.
	Idle    time.Duration
	MinRate int64
}

// Defaults of Downloads.Idle and MinRate: a client that takes nothing for
// 30 s is gone; 16 KiB/s (128 kbit/s) downloads the default 20 MiB
// COBRANCA_MAX_FILE_BYTES in 21 minutes.
const (
	DefaultIdle    = 30 * time.Second
	DefaultMinRate = 16 << 10
)

// writePiece is how much of a stored chunk is written under one deadline:
// small enough that a slow client takes it well within Idle.
const writePiece = 64 << 10

// Details of an incomplete download's event: the bytes handed to the
// connection and the file's size.
const (
	BytesSentDetail = "bytesSent"
	FileBytesDetail = "fileBytes"
)

// DownloadPattern is the route of downloads; the router sets the {id} path
// value (net/http's ServeMux and chi both do).
const DownloadPattern = "/files/{id}/download"

// auditTimeout bounds the audit write of one download.
const auditTimeout = 5 * time.Second

// ServeHTTP checks the link — signature (constant time), expiry, then in
// the store that it exists for this file and is not revoked — and streams
// the file, or answers 403 with {"error":{"code":…}} saying which check
// failed and nothing of the file. The link is the credential: no bearer
// token, no Origin check. Every download of a link that verified is
// audited (link and file ids, never content or the URL); so is every
// refusal, forged links too, counted per client a minute (Refusals).
func (d *Downloads) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "private, no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		failure.WriteHTTP(w, http.StatusMethodNotAllowed, &failure.Error{Code: "method_not_allowed", Message: "a download link is opened with GET or HEAD"})
		return
	}
	now := time.Now()
	if d.Now != nil {
		now = d.Now()
	}
	claim, err := d.Links.Verify(r.PathValue("id"), r.URL.Query(), now)
	if err != nil {
		d.refuse(w, r, claim, err)
		return
	}
	_, f, err := Check(r.Context(), d.DB, claim)
	if err != nil {
		d.refuse(w, r, claim, err)
		return
	}
	if err := d.audit(r, claim, auditlog.Allowed, "", headDetails(r)); err != nil {
		d.Logger.ErrorContext(r.Context(), "download not served: audit write failed", "err", err)
		h.Set("Retry-After", "1")
		failure.WriteHTTP(w, http.StatusServiceUnavailable, &failure.Error{Code: failure.Unavailable, Message: "the download cannot be recorded now; retry later"})
		return
	}
	h.Set("Content-Type", f.MediaType)
	h.Set("Content-Length", strconv.FormatInt(f.Size, 10))
	h.Set("Content-Disposition", Disposition(f.Name))
	// The body is the file's bytes, never a page: nothing in it runs.
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if sent, err := d.send(w, r, f); err != nil {
		if r.Context().Err() == nil && !errors.Is(err, errClientGone) {
			d.Logger.ErrorContext(r.Context(), "download cut short", "err", err)
		}
		if aerr := d.audit(r, claim, auditlog.Incomplete, "", map[string]int64{BytesSentDetail: sent, FileBytesDetail: f.Size}); aerr != nil {
			d.Logger.ErrorContext(r.Context(), "audit write failed", "event", DownloadEvent, "err", aerr)
		}
		// The status is sent: only cutting the connection tells the client
		// that the body is incomplete.
		panic(http.ErrAbortHandler)
	}
}

// errClientGone wraps a failed write of the body: the client left, stalled
// or crawled below the minimum rate, which is no fault of the server's.
var errClientGone = errors.New("files: the client did not take the download")

// send writes f's content to w and returns how many bytes it wrote. Each
// piece is written under a deadline Idle from now, never past the whole
// transfer's deadline: Idle plus the size at MinRate, from the start.
func (d *Downloads) send(w http.ResponseWriter, r *http.Request, f File) (int64, error) {
	idle, rate := d.Idle, d.MinRate
	if idle <= 0 {
		idle = DefaultIdle
	}
	if rate <= 0 {
		rate = DefaultMinRate
	}
	start := time.Now()
	end := start.Add(idle + time.Duration(float64(f.Size)/float64(rate)*float64(time.Second)))
	rc := http.NewResponseController(w)
	var sent int64
	for seq, off := int64(0), int64(0); off < f.Size; seq, off = seq+1, off+ChunkSize {
		b, err := ReadChunk(r.Context(), d.DB, f.ID, seq)
		if err == nil && int64(len(b)) != min(ChunkSize, f.Size-off) {
			err = errors.New("files: short read of stored content")
		}
		if err != nil {
			return sent, err
		}
		for len(b) > 0 {
			p := b[:min(writePiece, len(b))]
			// A writer that cannot take deadlines (a test recorder) keeps
			// the server's.
			dl := time.Now().Add(idle)
			if dl.After(end) {
				dl = end
			}
			_ = rc.SetWriteDeadline(dl)
			n, err := w.Write(p)
			sent += int64(n)
			if err != nil {
				return sent, fmt.Errorf("%w: %w", errClientGone, err)
			}
			b = b[len(p):]
		}
	}
	// The response's end is written after the handler returns; the
	// deadline of the last piece covers it.
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return sent, fmt.Errorf("%w: %w", errClientGone, err)
	}
	return sent, nil
}

// refuse answers a link that does not download: 403 with the refusal's
// code, audited when the link verified; a store failure is 503.
func (d *Downloads) refuse(w http.ResponseWriter, r *http.Request, c Claim, err error) {
	fe, ok := failure.As(err)
	if !ok || fe.Code == CodeFileNotFound {
		// The store failed, or a live link's file is gone: neither is the
		// caller's doing.
		d.Logger.ErrorContext(r.Context(), "download failed", "err", err)
		w.Header().Set("Retry-After", "1")
		failure.WriteHTTP(w, http.StatusServiceUnavailable, &failure.Error{Code: failure.Unavailable, Message: "the download is unavailable now; retry later"})
		return
	}
	switch {
	case d.Refusals != nil:
		d.Refusals.Refused(r, auditlog.Event{Name: DownloadEvent, Tool: Object(c.FileID, c.LinkID), RequestID: request.From(r.Context()).ID,
			Outcome: auditlog.Denied, FailureCode: string(fe.Code)})
	case c.LinkID != "": // the signature verified: a link of this server
		if aerr := d.audit(r, c, auditlog.Denied, fe.Code, headDetails(r)); aerr != nil {
			d.Logger.ErrorContext(r.Context(), "audit write failed", "event", DownloadEvent, "err", aerr)
		}
	}
	info := request.From(r.Context())
	info.Outcome, info.Code = string(auditlog.Denied), string(fe.Code)
	failure.WriteHTTP(w, http.StatusForbidden, fe)
}

// HeadDetail is the detail (set to 1) of a download event of a HEAD
// request: the link was used, and nothing of the file was sent. A GET's
// event has no details.
const HeadDetail = "headRequest"

func headDetails(r *http.Request) map[string]int64 {
	if r.Method == http.MethodHead {
		return map[string]int64{HeadDetail: 1}
	}
	return nil
}

// audit records one download event. The event's Tool field names the
// objects acted on ("file:f_… link:l_…"), as for every files event (Object).
func (d *Downloads) audit(r *http.Request, c Claim, outcome auditlog.Outcome, code failure.Code, details map[string]int64) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	return d.Audit.Record(ctx, auditlog.Event{
		Name:        DownloadEvent,
		Tool:        Object(c.FileID, c.LinkID),
		RequestID:   request.From(r.Context()).ID,
		Outcome:     outcome,
		FailureCode: string(code),
		Details:     details,
	})
}

// Object names, in an audit event's Tool field, the file and link a files
// event is about: "file:f_…", "link:l_…" or "file:f_… link:l_…". Files
// events are not tool calls; the ids are the server's own, never payload.
func Object(fileID, linkID string) string {
	var parts []string
	if fileID != "" {
		parts = append(parts, "file:"+fileID)
	}
	if linkID != "" {
		parts = append(parts, "link:"+linkID)
	}
	return strings.Join(parts, " ")
}

// Disposition is the Content-Disposition of a download of a file named
// name: an attachment, with an ASCII fallback file name and the exact one
// as RFC 8187 UTF-8 (filename*).
func Disposition(name string) string {
	var ascii, ext strings.Builder
	for _, r := range name {
		switch {
		case r == '"' || r == '\\' || r < 0x20 || r >= 0x7f:
			ascii.WriteByte('_')
		default:
			ascii.WriteRune(r)
		}
	}
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			ext.WriteByte(c)
		} else {
			ext.WriteByte('%')
			ext.WriteByte(hex[c>>4])
			ext.WriteByte(hex[c&15])
		}
	}
	return `attachment; filename="` + ascii.String() + `"; filename*=UTF-8''` + ext.String()
}
