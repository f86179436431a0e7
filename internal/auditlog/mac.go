package auditlog

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"time"
)

// macInfo derives the event MAC key from the audit key (HKDF-SHA256, RFC 5869), so that the
// key of the MACs is not the key of the argument and result digests, which keeps the raw key.
const macInfo = "cobranca audit event mac v1"

// nonceLen is the length of an event's nonce; macLen, of its MAC.
const (
	nonceLen = 16
	macLen   = sha256.Size
)

// ErrNoKey is returned when writing an event through a Log made without the audit key: such
// a Log can verify the hash chain, and nothing else.
var ErrNoKey = errors.New("audit log: no audit key: events cannot be authenticated")

func deriveMACKey(key []byte) ([]byte, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("audit key: want at least %d bytes, have %d", MinKeyLen, len(key))
	}
	return hkdf.Key(sha256.New, key, nil, macInfo, sha256.Size)
}

// record is an event ready to be written: stamped with the server's time, a fresh nonce and
// the MAC over both and the content.
type record struct {
	ev      Event
	details string // detailsJSON(ev.Details)
	nonce   []byte
	mac     []byte
	keyID   string // the key the MAC is under (KeyID); "" for a spooled legacy record
}

// stamp validates ev and makes it a record made at time at, with a fresh nonce, under the
// log's MAC key.
func (l *Log) stamp(ev Event, at time.Time) (record, error) {
	return l.stampNonce(ev, at, nil)
}

// stampNonce is stamp with the given nonce, or a fresh one when nonce is nil.
func (l *Log) stampNonce(ev Event, at time.Time, nonce []byte) (record, error) {
	if l.macKey == nil {
		return record{}, ErrNoKey
	}
	if err := ev.validate(); err != nil {
		return record{}, err
	}
	ev.Seq, ev.Time = 0, time.Time{}
	ev.ServerTime = time.UnixMicro(at.UnixMicro()).UTC()
	b := make([]byte, nonceLen+macLen) // one allocation for both
	if nonce == nil {
		rand.Read(b[:nonceLen])
	} else {
		copy(b, nonce)
	}
	r := record{ev: ev, details: detailsJSON(ev.Details), nonce: b[:nonceLen:nonceLen], keyID: l.keyID}
	r.mac = l.eventMAC(b[nonceLen:nonceLen], r.nonce, &r.ev, r.details)
	return r, nil
}

// macState is a keyed HMAC and a buffer, reused through Log.macs: the MAC is on every append.
type macState struct {
	h   hash.Hash
	buf []byte
}

// eventMAC appends to dst the HMAC-SHA256 under the MAC key over a domain tag, the nonce, the
// server time in Unix microseconds and the event's content (appendContent, details being its
// detailsJSON): everything about the event the server decides. The id, transaction and
// database time are the database's, and the hash chain covers them.
func (l *Log) eventMAC(dst, nonce []byte, ev *Event, details string) []byte {
	st, _ := l.macs.Get().(*macState)
	if st == nil {
		st = &macState{h: hmac.New(sha256.New, l.macKey), buf: make([]byte, 0, 512)}
	}
	b := macInput(st.buf[:0], nonce, ev, details)
	st.h.Reset()
	st.h.Write(b)
	dst = st.h.Sum(dst)
	st.buf = b
	l.macs.Put(st)
	return dst
}

// macInput appends what eventMAC authenticates. The key id is not in it: it only picks the
// key, and a MAC checked under another key than its own fails.
func macInput(b, nonce []byte, ev *Event, details string) []byte {
	b = append(b, "cobranca.audit.mac.v1\x00"...)
	b = appendString(b, string(nonce))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.ServerTime.UnixMicro()))
	return appendContent(b, ev, details)
}

// macUnder is the event's MAC under macKey, one of the Log's verifying keys.
func macUnder(macKey, nonce []byte, ev *Event, details string) []byte {
	h := hmac.New(sha256.New, macKey)
	h.Write(macInput(nil, nonce, ev, details))
	return h.Sum(nil)
}
