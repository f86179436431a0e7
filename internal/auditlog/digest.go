package auditlog

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MinKeyLen is the shortest digest key accepted.
const MinKeyLen = 32

// Digester makes the keyed digests an event carries instead of its arguments and result:
// HMAC-SHA256, so that equal arguments give equal digests (a retry can be recognised) but
// nobody without the key can test a guess of what the arguments were.
type Digester struct{ key []byte }

// NewDigester returns a Digester with key (at least MinKeyLen bytes).
func NewDigester(key []byte) (*Digester, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("audit digest key: want at least %d bytes, have %d", MinKeyLen, len(key))
	}
	return &Digester{key: bytes.Clone(key)}, nil
}

// JSON returns the hex HMAC of the canonical form of a JSON document: objects with sorted
// keys, no insignificant space, numbers as written. Documents that differ only in key order or
// spacing have the same digest.
func (d *Digester) JSON(doc []byte) (string, error) {
	c, err := CanonicalJSON(doc)
	if err != nil {
		return "", err
	}
	return d.Bytes(c), nil
}

// Bytes returns the hex HMAC of b.
func (d *Digester) Bytes(b []byte) string {
	m := hmac.New(sha256.New, d.key)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil))
}

// CanonicalJSON re-encodes a JSON document with object keys sorted and no insignificant
// space. Numbers keep their spelling.
func CanonicalJSON(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("canonical json: data after the document")
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("canonical json: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
