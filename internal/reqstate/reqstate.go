// Package reqstate seals and opens the request state of an in-band
// confirmation (docs/security-model.md, "Confirmation"): the opaque string an
// input-required result hands the client, which the client echoes back in
// the retry's requestState (a plain JSON string in go-sdk v1.8.0; the SDK
// sets no size limit, this package sets MaxStateLen). Any replica holding
// the key ring opens it; none needs a session.
//
// # Format (version 1)
//
// The state is base64url without padding (strict: unused bits must be
// zero, so one state has one spelling) of
//
//	version   1 byte, 0x01
//	keyIDLen  1 byte, 1..MaxKeyIDLen
//	keyID     keyIDLen bytes, [A-Za-z0-9._-]
//	nonce     16 bytes, crypto/rand; the single-use token a nonce store spends
//	expires   8 bytes, big-endian Unix seconds
//	binding   32 bytes, SHA-256 of the Binding (see Binding.digest)
//	payLen    1 byte, 0..MaxPayload
//	payload   payLen bytes, opaque to this package
//	mac       32 bytes, HMAC-SHA256 under the key named by keyID over
//	          macContext || every byte above
//
// # Integrity, not confidentiality
//
// The state is authenticated, not encrypted. Everything in it is something
// the carrier already knows: the nonce and expiry are bookkeeping, the
// binding digest commits to the caller's own principal, the tool it called
// and the arguments it sent, and the payload is meant for what the client
// has already seen (the preview's digest). So integrity is what the retry
// needs: a client may read the state but can change no bit of it. An AEAD
// (AES-256-GCM with the binding as additional data) would hide the payload
// at the price of a 96-bit random nonce per key (a birthday bound to watch
// under rotation) and of a format nobody can inspect while debugging; the
// pipeline must therefore never put a secret in the payload. If it ever
// must, this package moves to version 2 with an AEAD, and the version byte
// says which.
//
// # Refusals
//
// Open checks, in order, and answers with the first failure's *Error:
// length and spelling (Malformed), key id (UnknownKey), MAC (Forged),
// binding (OtherBinding: other caller, other tool or other arguments) and
// expiry against the caller's clock with Leeway (Expired). MAC and binding
// compare in constant time. Open does not spend the nonce: the caller does,
// in a store every replica shares, so a replayed state is refused there.
package reqstate

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// Limits and sizes of the format.
const (
	Version     = 1
	NonceLen    = 16
	MaxKeyIDLen = 16
	MinKeyLen   = 32  // bytes of key material, the HMAC-SHA256 block's half
	MaxPayload  = 128 // bytes; room for a couple of digests, no more
	MaxKeys     = 16

	digestLen = sha256.Size
	macLen    = sha256.Size
	// fixedLen is every byte but the key id and the payload.
	fixedLen = 1 + 1 + NonceLen + 8 + digestLen + 1 + macLen
	// MaxStateLen bounds the sealed string; Open refuses a longer one before
	// decoding anything.
	MaxStateLen = (fixedLen + MaxKeyIDLen + MaxPayload + 2) / 3 * 4
)

// Leeway is how far past its expiry a state still opens: replicas' clocks
// differ by a little (NTP keeps them within a second or so), and a state
// sealed on one replica is opened on another.
const Leeway = 5 * time.Second

// macContext separates this MAC from any other use of the same key.
const macContext = "cobranca/reqstate\x00"

// Code is a stable error code.
type Code string

// Codes of Open's refusals, and of Seal's and NewRing's invalid input.
const (
	Malformed    Code = "request_state_malformed"
	UnknownKey   Code = "request_state_unknown_key"
	Forged       Code = "request_state_forged"
	Expired      Code = "request_state_expired"
	OtherBinding Code = "request_state_other_binding"
	InvalidInput Code = "request_state_invalid_input"
	InvalidKey   Code = "request_state_invalid_key"
)

// Error is a refusal or an invalid input. Its text names the code and, for
// invalid input, the field; never a key, a payload or the state itself.
type Error struct {
	Code    Code
	Field   string // for InvalidInput and InvalidKey
	Message string
}

func (e *Error) Error() string {
	if e.Field != "" {
		return string(e.Code) + ": " + e.Field + ": " + e.Message
	}
	return string(e.Code) + ": " + e.Message
}

// Is matches any *Error with the same code, so errors.Is(err, ErrExpired)
// holds whatever the field or message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Open's refusals, one per code.
var (
	ErrMalformed    = &Error{Code: Malformed, Message: "request state is not a valid sealed state"}
	ErrUnknownKey   = &Error{Code: UnknownKey, Message: "request state was sealed under a key this server no longer holds"}
	ErrForged       = &Error{Code: Forged, Message: "request state does not verify"}
	ErrExpired      = &Error{Code: Expired, Message: "request state has expired"}
	ErrOtherBinding = &Error{Code: OtherBinding, Message: "request state belongs to another caller, tool or arguments"}
)

func invalid(code Code, field, msg string) *Error {
	return &Error{Code: code, Field: field, Message: msg}
}

// Binding is what a state is bound to, as strings the caller gives: the
// principal's stable key, the tool's name and the canonical arguments'
// digest. A state opens only with an equal binding.
type Binding struct {
	Principal  string
	Tool       string
	ArgsDigest string
}

func (b Binding) validate() error {
	for _, f := range []struct{ name, v string }{
		{"principal", b.Principal}, {"tool", b.Tool}, {"argsDigest", b.ArgsDigest},
	} {
		if f.v == "" {
			return invalid(InvalidInput, "binding."+f.name, "must not be empty")
		}
	}
	return nil
}

// digest is SHA-256 over the three fields, each length-prefixed so that no
// two bindings share an encoding.
func (b Binding) digest() [digestLen]byte {
	h := sha256.New()
	var n [8]byte
	for _, s := range []string{b.Principal, b.Tool, b.ArgsDigest} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var d [digestLen]byte
	h.Sum(d[:0])
	return d
}

// Nonce is a state's single-use token.
type Nonce [NonceLen]byte

// String is the nonce in hex, a key for a nonce store.
func (n Nonce) String() string { return hex.EncodeToString(n[:]) }

// Opened is what a verified state carries.
type Opened struct {
	KeyID   string
	Nonce   Nonce
	Expires time.Time // whole seconds, UTC
	Payload []byte
}

// Key is one HMAC key of a ring. Its material never appears in its text.
type Key struct {
	ID     string
	Secret []byte
}

// String names the key by id only.
func (k Key) String() string { return "reqstate.Key(" + k.ID + ")" }

// LogValue logs the key by id only.
func (k Key) LogValue() slog.Value { return slog.GroupValue(slog.String("id", k.ID)) }

// GoString keeps %#v from printing the material.
func (k Key) GoString() string { return k.String() }

// Ring holds the current key, which seals, and older keys, which still
// open until a ring without them replaces this one. A Ring is immutable and
// safe for concurrent use. Its keys sit behind a pointer so that printing a
// Ring by value, through any path that skips String, shows no material.
type Ring struct{ *ring }

type ring struct {
	current string
	keys    map[string][]byte
	ids     []string // current first, for String
}

// NewRing validates and copies the keys: ids of 1..MaxKeyIDLen characters
// out of [A-Za-z0-9._-], distinct; secrets of at least MinKeyLen bytes.
func NewRing(current Key, older ...Key) (*Ring, error) {
	all := append([]Key{current}, older...)
	if len(all) > MaxKeys {
		return nil, invalid(InvalidKey, "keys", fmt.Sprintf("at most %d keys", MaxKeys))
	}
	r := &ring{current: current.ID, keys: make(map[string][]byte, len(all))}
	for i, k := range all {
		field := fmt.Sprintf("keys[%d]", i)
		if err := validKeyID(k.ID); err != nil {
			return nil, invalid(InvalidKey, field+".id", err.Error())
		}
		if _, dup := r.keys[k.ID]; dup {
			return nil, invalid(InvalidKey, field+".id", fmt.Sprintf("duplicate key id %q", k.ID))
		}
		if len(k.Secret) < MinKeyLen {
			return nil, invalid(InvalidKey, field+".secret", fmt.Sprintf("key %q is shorter than %d bytes", k.ID, MinKeyLen))
		}
		r.keys[k.ID] = append([]byte(nil), k.Secret...)
		r.ids = append(r.ids, k.ID)
	}
	return &Ring{r}, nil
}

func validKeyID(id string) error {
	if id == "" || len(id) > MaxKeyIDLen {
		return fmt.Errorf("must be 1 to %d characters", MaxKeyIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("must be letters, digits, '.', '_' or '-'")
		}
	}
	return nil
}

// String names the ring's keys by id, current first.
func (r Ring) String() string {
	return "reqstate.Ring(current=" + r.current + " keys=" + strings.Join(r.ids, ",") + ")"
}

// LogValue logs the ring's key ids only.
func (r Ring) LogValue() slog.Value {
	return slog.GroupValue(slog.String("current", r.current), slog.Any("keys", r.ids))
}

// maxExpires keeps expiry arithmetic (Add(Leeway)) far from overflow.
const maxExpires = 1 << 62

var enc = base64.RawURLEncoding.Strict()

// Seal returns the state bound to b, carrying payload, opening until
// expires (truncated to the second), under the ring's current key with a
// fresh random nonce.
func (r *Ring) Seal(b Binding, payload []byte, expires time.Time) (string, error) {
	if err := b.validate(); err != nil {
		return "", err
	}
	if len(payload) > MaxPayload {
		return "", invalid(InvalidInput, "payload", fmt.Sprintf("longer than %d bytes", MaxPayload))
	}
	if expires.Unix() <= 0 || expires.Unix() > maxExpires {
		return "", invalid(InvalidInput, "expires", "must be after 1970 and before year 146 billion")
	}
	id := r.current
	buf := make([]byte, 0, fixedLen+len(id)+len(payload))
	buf = append(buf, Version, byte(len(id)))
	buf = append(buf, id...)
	var n Nonce
	rand.Read(n[:]) // never fails (crypto/rand, Go 1.24+)
	buf = append(buf, n[:]...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(expires.Unix()))
	d := b.digest()
	buf = append(buf, d[:]...)
	buf = append(buf, byte(len(payload)))
	buf = append(buf, payload...)
	buf = appendMAC(buf, r.keys[id], buf)
	return enc.EncodeToString(buf), nil
}

func appendMAC(dst, key, msg []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(macContext))
	m.Write(msg)
	return m.Sum(dst)
}

// Open verifies state against b at now and returns what it carries, or
// one of the Err* refusals (see the package doc for their order). It does
// not spend the nonce.
func (r *Ring) Open(state string, b Binding, now time.Time) (Opened, error) {
	if len(state) > MaxStateLen || len(state) < (fixedLen+1)*4/3 {
		return Opened{}, ErrMalformed
	}
	raw, err := enc.DecodeString(state)
	if err != nil {
		return Opened{}, ErrMalformed
	}
	// Parse: version, key id, then the fixed fields and the payload.
	if len(raw) < fixedLen+1 || raw[0] != Version {
		return Opened{}, ErrMalformed
	}
	idLen := int(raw[1])
	if idLen == 0 || idLen > MaxKeyIDLen || len(raw) < fixedLen+idLen {
		return Opened{}, ErrMalformed
	}
	p := 2
	id := string(raw[p : p+idLen])
	p += idLen
	var o Opened
	copy(o.Nonce[:], raw[p:p+NonceLen])
	p += NonceLen
	exp := binary.BigEndian.Uint64(raw[p : p+8])
	p += 8
	gotDigest := raw[p : p+digestLen]
	p += digestLen
	payLen := int(raw[p])
	p++
	if payLen > MaxPayload || len(raw) != p+payLen+macLen {
		return Opened{}, ErrMalformed
	}
	payload := raw[p : p+payLen]
	p += payLen

	key, ok := r.keys[id]
	if !ok {
		return Opened{}, ErrUnknownKey
	}
	var want [macLen]byte
	if !hmac.Equal(appendMAC(want[:0], key, raw[:p]), raw[p:]) {
		return Opened{}, ErrForged
	}
	d := b.digest()
	if subtle.ConstantTimeCompare(d[:], gotDigest) != 1 {
		return Opened{}, ErrOtherBinding
	}
	if exp > maxExpires {
		return Opened{}, ErrMalformed // only a key holder could have sealed this
	}
	o.Expires = time.Unix(int64(exp), 0).UTC()
	if !now.Before(o.Expires.Add(Leeway)) {
		return Opened{}, ErrExpired
	}
	o.KeyID = id
	o.Payload = append([]byte{}, payload...)
	return o, nil
}

// Tag returns the current key's id and the HMAC-SHA256 under that key of
// use and msg: for another short-lived token the holders of the ring sign
// and verify (internal/files' download links, under a ring of their own).
// use names the token's kind and format version, and keeps its tags apart
// from any other use of the same keys: it must be non-empty, hold no NUL
// byte, and not be this package's own use (a programming error: Tag
// panics).
func (r *Ring) Tag(use string, msg []byte) (keyID string, tag []byte) {
	return r.current, tagWith(r.keys[r.current], use, msg)
}

// CheckTag verifies tag as Tag's for use and msg under the key keyID, in
// constant time: nil, ErrUnknownKey for a key the ring does not hold, or
// ErrForged.
func (r *Ring) CheckTag(keyID, use string, msg, tag []byte) error {
	want, err := r.TagUnder(keyID, use, msg)
	if err != nil {
		return err
	}
	if !hmac.Equal(want, tag) {
		return ErrForged
	}
	return nil
}

// TagUnder is Tag under the key keyID, current or older (ErrUnknownKey for
// a key the ring does not hold): for a token that derives a key of its own
// from the ring per message and must derive it again when it comes back
// (internal/signin's sealed sign-in cookie). The tag is then key material:
// it must never be sent.
func (r *Ring) TagUnder(keyID, use string, msg []byte) ([]byte, error) {
	key, ok := r.keys[keyID]
	if !ok {
		return nil, ErrUnknownKey
	}
	return tagWith(key, use, msg), nil
}

// tagWith is HMAC-SHA256 under key over use, a NUL byte and msg.
func tagWith(key []byte, use string, msg []byte) []byte {
	if use == "" || strings.IndexByte(use, 0) >= 0 || use+"\x00" == macContext {
		panic("reqstate: invalid tag use " + strconv.Quote(use))
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(use))
	m.Write([]byte{0})
	m.Write(msg)
	return m.Sum(nil)
}
