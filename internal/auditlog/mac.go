package auditlog

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
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
	ev    Event
	nonce []byte
	mac   []byte
}

// stamp validates ev and makes it a record made at time at, with a fresh nonce, under the
// log's MAC key.
func (l *Log) stamp(ev Event, at time.Time) (record, error) {
	nonce := make([]byte, nonceLen)
	rand.Read(nonce)
	return l.stampNonce(ev, at, nonce)
}

func (l *Log) stampNonce(ev Event, at time.Time, nonce []byte) (record, error) {
	if l.macKey == nil {
		return record{}, ErrNoKey
	}
	if err := ev.validate(); err != nil {
		return record{}, err
	}
	ev.Seq, ev.Time = 0, time.Time{}
	ev.ServerTime = time.UnixMicro(at.UnixMicro()).UTC()
	m := eventMAC(l.macKey, nonce, &ev)
	return record{ev: ev, nonce: nonce, mac: m[:]}, nil
}

// eventMAC is HMAC-SHA256 under the MAC key over a domain tag, the nonce, the server time in
// Unix microseconds and the event's content (appendContent): everything about the event the
// server decides. The id, transaction and database time are the database's, and the hash
// chain covers them.
func eventMAC(key, nonce []byte, ev *Event) [macLen]byte {
	b := make([]byte, 0, 512)
	b = append(b, "cobranca.audit.mac.v1\x00"...)
	b = appendString(b, string(nonce))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.ServerTime.UnixMicro()))
	b = appendContent(b, ev)
	m := hmac.New(sha256.New, key)
	m.Write(b)
	var out [macLen]byte
	m.Sum(out[:0])
	return out
}
