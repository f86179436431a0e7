package signin

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cobranca/cobranca/internal/auth"
	"github.com/cobranca/cobranca/internal/reqstate"
)

// A sign-in in progress lives in the browser, not on the server: /signin seals what the
// callback checks into a short-lived cookie, and the callback opens it. Anyone may start a
// sign-in, so anything the server kept per sign-in could be created without bound (issue 25:
// a pool of 20,000 rows, once full, locked every person out).
//
// Format (version 1), base64url without padding:
//
//	version  1 byte, 0x01
//	kidLen   1 byte, then kid: the id of the request-state key it was sealed under
//	salt     16 bytes, crypto/rand
//	sealed   AES-256-GCM of the JSON of sealedPending, tag appended
//
// The AES key is the ring key's HMAC over cookieUse and the salt (reqstate.Ring.TagUnder):
// one key per cookie, so the GCM nonce is fixed (all zero) and no nonce is ever reused under a
// key, however many sign-ins anyone starts. The additional data is the header (version, kid,
// salt) and the cookie's name. The cookie is encrypted, not only signed: it holds the PKCE
// verifier and the nonce.

// cookieUse separates the sign-in cookie's keys from every other use of the request-state keys.
const cookieUse = "cobranca/signin-cookie/v1"

const (
	cookieVersion = 1
	saltLen       = 16
	// maxCookieBytes bounds the cookie's name and value: browsers keep a cookie of up to 4096
	// bytes, and send none longer.
	maxCookieBytes = 4000
)

var cookieEncoding = base64.RawURLEncoding.Strict()

// pending is a sign-in in progress: what the callback checks, and where it goes back to.
type pending struct {
	state, nonce, verifier string
	returnTo               string
	stepUp                 auth.StepUp
	expires                time.Time // whole seconds
}

// sealedPending is pending as the cookie carries it.
type sealedPending struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	ReturnTo string `json:"r"`
	ACR      string `json:"a,omitempty"` // acr_values asked, space separated
	MaxAge   int64  `json:"m,omitempty"` // max_age asked, seconds
	Expires  int64  `json:"e"`           // Unix seconds
}

// errNoSignin: the browser holds no live sign-in (no cookie, altered, sealed under a key no
// longer held, or expired).
var errNoSignin = errors.New("signin: no sign-in in progress")

// errCookieTooLong: the sign-in does not fit in a cookie (a return path and acr_values near
// their bounds).
var errCookieTooLong = errors.New("signin: the sign-in cookie would be too long")

var zeroNonce [12]byte

// cookieAEAD is the AES-256-GCM of a cookie sealed under the ring key kid with salt.
func cookieAEAD(keys *reqstate.Ring, kid string, salt []byte) (cipher.AEAD, error) {
	key, err := keys.TagUnder(kid, cookieUse, salt)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key) // 32 bytes: AES-256
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealPending returns p sealed as the value of the cookie name, under keys' current key.
func sealPending(keys *reqstate.Ring, name string, p *pending) (string, error) {
	plain, err := json.Marshal(sealedPending{State: p.state, Nonce: p.nonce, Verifier: p.verifier, ReturnTo: p.returnTo,
		ACR: strings.Join(p.stepUp.ACRValues, " "), MaxAge: int64(p.stepUp.MaxAge / time.Second), Expires: p.expires.Unix()})
	if err != nil {
		return "", err
	}
	salt := make([]byte, saltLen)
	_, _ = rand.Read(salt) // never fails (crypto/rand)
	kid, _ := keys.Tag(cookieUse, salt)
	aead, err := cookieAEAD(keys, kid, salt)
	if err != nil {
		return "", err
	}
	header := append([]byte{cookieVersion, byte(len(kid))}, kid...)
	header = append(header, salt...)
	v := cookieEncoding.EncodeToString(aead.Seal(header, zeroNonce[:], plain, additional(header, name)))
	if len(name)+1+len(v) > maxCookieBytes {
		return "", errCookieTooLong
	}
	return v, nil
}

// additional is the GCM additional data: the header and the cookie's name.
func additional(header []byte, name string) []byte {
	return append(append(append([]byte{}, header...), 0), name...)
}

// openPending opens the value of the cookie name at now: the sign-in it holds, or
// errNoSignin (the cause wrapped, for the log).
func openPending(keys *reqstate.Ring, name, value string, now time.Time) (*pending, error) {
	if len(name)+1+len(value) > maxCookieBytes {
		return nil, fmt.Errorf("%w: too long", errNoSignin)
	}
	raw, err := cookieEncoding.DecodeString(value)
	if err != nil || len(raw) < 2 || raw[0] != cookieVersion {
		return nil, fmt.Errorf("%w: malformed", errNoSignin)
	}
	n := int(raw[1])
	if n == 0 || len(raw) < 2+n+saltLen {
		return nil, fmt.Errorf("%w: malformed", errNoSignin)
	}
	header := raw[:2+n+saltLen]
	kid, salt := string(raw[2:2+n]), raw[2+n:2+n+saltLen]
	aead, err := cookieAEAD(keys, kid, salt)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoSignin, err)
	}
	plain, err := aead.Open(nil, zeroNonce[:], raw[len(header):], additional(header, name))
	if err != nil {
		return nil, fmt.Errorf("%w: does not open", errNoSignin)
	}
	var s sealedPending
	if err := json.Unmarshal(plain, &s); err != nil {
		return nil, fmt.Errorf("%w: %w", errNoSignin, err) // only a key holder sealed it
	}
	p := &pending{state: s.State, nonce: s.Nonce, verifier: s.Verifier, returnTo: s.ReturnTo,
		stepUp: auth.StepUp{ACRValues: strings.Fields(s.ACR), MaxAge: time.Duration(s.MaxAge) * time.Second}, expires: time.Unix(s.Expires, 0)}
	if !now.Before(p.expires) {
		return nil, fmt.Errorf("%w: expired", errNoSignin)
	}
	if p.state == "" || p.nonce == "" || p.verifier == "" || !LocalPath(p.returnTo) {
		return nil, fmt.Errorf("%w: incomplete", errNoSignin)
	}
	return p, nil
}
