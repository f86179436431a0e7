package auditlog

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/cobranca/cobranca/internal/canonical"
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

// JSON returns the hex HMAC of the RFC 8785 canonical form of a JSON document
// (canonical.Transform). Documents of the same value have the same digest,
// whatever their key order, spacing, escapes or number spelling (100, 100.0,
// 1e2); a document that is not exactly one I-JSON value is an error.
func (d *Digester) JSON(doc []byte) (string, error) {
	c, err := canonical.Transform(doc)
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
