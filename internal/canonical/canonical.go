// Package canonical writes the one canonical form of JSON the server digests:
// the JSON Canonicalization Scheme of RFC 8785 (JCS). Two spellings of the same
// value — key order, spacing, escapes, 100 or 100.0 or 1e2 — canonicalize to
// the same bytes, so a digest of them recognises the same arguments whatever
// the client wrote.
//
// The work is done by github.com/gowebpki/jcs, the Go implementation by the
// RFC's authors. This package is the only place that imports it, and it holds
// the input contract RFC 8785 asks for: exactly one JSON value (I-JSON, RFC
// 7493), valid UTF-8, no duplicate keys, no lone surrogates, no number outside
// the range of an IEEE-754 double.
package canonical

import (
	"strings"

	"github.com/gowebpki/jcs"
)

// Error is why a document has no canonical form. Its message names the fault
// but never quotes the document: the document may hold payloads (names,
// amounts) that must not reach a log.
type Error struct{ fault string }

func (e *Error) Error() string { return "canonical json: " + e.fault }

// Transform returns the RFC 8785 canonical form of doc, or an *Error when doc
// is not exactly one I-JSON value.
func Transform(doc []byte) ([]byte, error) {
	if doc == nil {
		doc = []byte{} // jcs refuses nil with a message of its own; empty is the same fault
	}
	out, err := jcs.Transform(doc)
	if err != nil {
		return nil, &Error{fault: fault(err.Error())}
	}
	return out, nil
}

// fault is jcs's message without the fragment of the document some messages
// quote after `: "` (a duplicate key, an invalid literal or number, an
// escape), lower-cased as Go errors are.
func fault(msg string) string {
	msg, _, _ = strings.Cut(msg, `: "`)
	if msg == "" {
		return "invalid document"
	}
	return strings.ToLower(msg[:1]) + msg[1:]
}
