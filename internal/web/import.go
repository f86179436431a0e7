package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/bankfile"
	"github.com/cobranca/cobranca/internal/failure"
	"github.com/cobranca/cobranca/internal/ledger"
	"github.com/cobranca/cobranca/internal/request"
	"github.com/cobranca/cobranca/internal/signin"
	"github.com/cobranca/cobranca/internal/store"
)

// ImportPath is the import page: GET shows its form (to who may import files), POST imports
// the file it sends, as `cobranca invoices import` and `cobranca payments import` do.
const ImportPath = "/console/import"

// The kinds of file the import page takes (its field kind).
const (
	importInvoices = "invoices" // a file of invoices: CSV with a header, or JSON Lines
	importPayments = "payments" // a bank file of payments: CNAB 240, OFX, CSV
)

// CodeFileTooLarge: the file sent to the import page is larger than an import file may be.
const CodeFileTooLarge failure.Code = "file_too_large"

// maxImportBody bounds the import form's body: the file, and room for the form's other
// fields and the parts' headers.
const maxImportBody = ledger.MaxImportBytes + 64<<10

// importView is the import page: its form, and what the last file did.
type importView struct {
	// MayImport: the reader may import files (the POST checks it again); Action is the
	// form's action.
	MayImport bool
	Action    string
	Kind      string
	MaxMiB    int64
	// LedgerLink and PaymentsLink lead to what an import changed.
	LedgerLink, PaymentsLink string
	// Invoices or Payments is what the file imported; Refused, why nothing was.
	Invoices *ledger.InvoiceImport
	Payments *bankfile.Import
	Refused  *importRefusal
}

// importRefusal is a file, or the form, refused: nothing imported.
type importRefusal struct {
	// Headline says what happened in the reader's words; Code and Detail, the refusal's code
	// and what it says (field and message) when no list of problems says it.
	Headline, Detail string
	Code             failure.Code
	// Of is what the file was read as, and Problems every problem found in it (none when the
	// form itself was refused).
	Of       string
	Problems []ledger.Problem
}

// readImport reads the import page: its form, for who may import.
func (p *Pages) readImport(_ context.Context, r *http.Request, d *pageData) error {
	d.View = &importView{MayImport: may(d.Session.Principal, importFiles), Action: withLang(r, ImportPath), Kind: importInvoices,
		MaxMiB: ledger.MaxImportBytes >> 20, LedgerLink: withLang(r, LedgerPath), PaymentsLink: withLang(r, PaymentsPath)}
	return nil
}

// importForm is the import form as sent.
type importForm struct {
	Kind string
	Name string // the file's name as the browser sent it
	Data []byte
}

// readImportForm reads the import form's fields after its token (signin.RP.CheckUpload):
// kind, then file (in any order, each once), the file at most max bytes. A form that cannot
// be read, or whose fields are missing, repeated, unknown or too large, is refused naming
// the field.
func readImportForm(mr *multipart.Reader, max int64) (importForm, *failure.Error) {
	var (
		f              importForm
		seenKind, file bool
	)
	bad := func(field, msg string) (importForm, *failure.Error) {
		return importForm{}, &failure.Error{Code: failure.InvalidArguments, Field: field, Message: msg}
	}
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return importForm{}, tooLarge()
			}
			return bad("", "the form could not be read as multipart/form-data")
		}
		switch name := part.FormName(); name {
		case "kind":
			if seenKind {
				return bad("kind", "is sent twice")
			}
			seenKind = true
			b, err := io.ReadAll(io.LimitReader(part, 64))
			if err != nil {
				return importForm{}, readFailure("kind", err)
			}
			f.Kind = string(b)
		case "file":
			if file {
				return bad("file", "is sent twice: send one file")
			}
			file = true
			f.Name = part.FileName()
			f.Data, err = io.ReadAll(io.LimitReader(part, max+1))
			if err != nil {
				return importForm{}, readFailure("file", err)
			}
			if int64(len(f.Data)) > max {
				return importForm{}, tooLarge()
			}
		default:
			if len(name) > 64 {
				name = name[:64]
			}
			return bad(strconv.Quote(name), "is not a field of the import form")
		}
	}
	switch {
	case f.Kind != importInvoices && f.Kind != importPayments:
		return bad("kind", `must be "invoices" (a file of invoices) or "payments" (a bank file of payments)`)
	case !file || f.Name == "" && len(f.Data) == 0:
		return bad("file", "choose a file to import")
	}
	return f, nil
}

// detail is what fe says after its code: its field and message.
func detail(fe *failure.Error) string {
	if fe.Field != "" {
		return fe.Field + ": " + fe.Message
	}
	return fe.Message
}

func tooLarge() *failure.Error {
	return &failure.Error{Code: CodeFileTooLarge, Field: "file",
		Message: "an import file holds at most " + strconv.Itoa(ledger.MaxImportBytes>>20) + " MiB: nothing imported"}
}

// readFailure is the refusal of a field whose reading failed (the body too large, or cut).
func readFailure(field string, err error) *failure.Error {
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return tooLarge()
	}
	return &failure.Error{Code: failure.InvalidArguments, Field: field, Message: "could not be read: the form was cut short", Err: err}
}

// runImport serves POST ImportPath (csrf, kind, file; multipart/form-data): a person who may
// (importFiles: the operator) imports the file as the command line does (ledger.ReadInvoiceFile
// and InvoiceFile.Import, bankfile.Read and File.Import): all of it in one transaction with
// its audit event (ledger.EventInvoicesImported, ledger.EventPaymentsImported: counts only,
// the person as subject), or nothing, every problem listed and the refusal audited. Anyone
// else is refused (403), and the refusal audited.
func (p *Pages) runImport(w http.ResponseWriter, r *http.Request) {
	const route = "POST " + ImportPath
	cp := p.pageAt(ImportPath)
	if r.ContentLength > maxImportBody {
		p.refuse(w, r, http.StatusRequestEntityTooLarge, tooLarge())
		return
	}
	sess, mr, ok := p.rp.CheckUpload(w, r, route, maxImportBody)
	if !ok {
		return
	}
	info := request.From(r.Context())
	info.Subject, info.Client = sess.Principal.Subject, sess.Principal.ClientID
	if !p.admitConsole(w, r, sess, importFiles, route) {
		return
	}
	d := newPage(r, cp.name)
	d.Session = sess
	d.Console = p.consoleHeader(r, d, cp)
	if err := cp.read(r.Context(), r, d); err != nil {
		p.internal(w, r, err)
		return
	}
	v := d.View.(*importView)
	form, fe := readImportForm(mr, ledger.MaxImportBytes)
	if fe != nil {
		status := failure.HTTPStatus(fe.Code)
		if fe.Code == CodeFileTooLarge {
			status = http.StatusRequestEntityTooLarge
		}
		v.Refused = &importRefusal{Headline: d.T.Codes[fe.Code], Code: fe.Code, Detail: detail(fe)}
		p.renderWith(w, r, cp.tmpl(), status, d)
		return
	}
	v.Kind = form.Kind
	err := p.importFile(r, sess, route, form, v)
	if fe, ok := failure.As(err); ok {
		v.Refused = &importRefusal{Headline: d.T.Import.NothingImported, Code: fe.Code, Detail: detail(fe)}
		if file, ok := errors.AsType[*ledger.FileError](err); ok {
			v.Refused.Detail, v.Refused.Of, v.Refused.Problems = "", file.Of, file.Problems
		}
		p.renderWith(w, r, cp.tmpl(), failure.HTTPStatus(fe.Code), d)
		return
	}
	if err != nil {
		p.internal(w, r, err)
		return
	}
	p.renderWith(w, r, cp.tmpl(), http.StatusOK, d)
}

// importFile imports form's file for the person of sess and sets what it did on v; a file
// refused is a *failure.Error (its cause a *ledger.FileError when the file had problems),
// audited rejected.
func (p *Pages) importFile(r *http.Request, sess *signin.Session, route string, form importForm, v *importView) error {
	ctx := r.Context()
	pr := sess.Principal
	event := ledger.EventInvoicesImported
	var run func(ctx context.Context, tx store.Tx) (map[string]int64, error)
	var err error
	switch form.Kind {
	case importInvoices:
		var file *ledger.InvoiceFile
		if file, err = ledger.ReadInvoiceFile(form.Data); err == nil {
			run = func(ctx context.Context, tx store.Tx) (map[string]int64, error) {
				n, err := file.Import(ctx, tx, p.now())
				v.Invoices = &n
				return n.Details(), err
			}
		}
	default:
		event = ledger.EventPaymentsImported
		var file *bankfile.File
		file, err = bankfile.Read(bytes.NewReader(form.Data), bankfile.Options{})
		if bad, ok := errors.AsType[*bankfile.Error](err); ok {
			err = bad.Refusal()
		} else if err == nil {
			run = func(ctx context.Context, tx store.Tx) (map[string]int64, error) {
				n, err := file.Import(ctx, tx, ledger.Actor{Subject: pr.Subject, Actor: pr.Actor}, p.now())
				v.Payments = &n
				return n.Details(), err
			}
		}
	}
	if err == nil {
		err = p.imports.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			details, err := run(ctx, tx)
			if err != nil {
				return err
			}
			ev := consoleEvent(r, sess, event, route)
			ev.Details = details
			return p.audit.Append(ctx, tx, ev)
		})
		if err == nil {
			p.audit.Kick()
			return nil
		}
		v.Invoices, v.Payments = nil, nil
	}
	fe, ok := failure.As(err)
	if !ok {
		return err
	}
	// Someone tried, and nothing changed: audited rejected, with how many problems.
	ev := consoleEvent(r, sess, event, route)
	ev.Outcome, ev.FailureCode = auditlog.Rejected, string(fe.Code)
	if file, ok := errors.AsType[*ledger.FileError](err); ok && file.Of != "" {
		ev.Details = map[string]int64{"badRows": int64(len(file.Problems))} // as the command line's
	}
	if aerr := p.audit.Record(ctx, ev); aerr != nil {
		return fmt.Errorf("web: import refused (%s), and its audit event not written: %w", fe.Code, aerr)
	}
	return err
}
