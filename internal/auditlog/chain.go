package auditlog

import (
	"crypto/sha256"
	"encoding/binary"
	"time"
)

// hashAlg is the version of the canonical encoding that hashes are computed over, stored with
// every seal (audit_seal.alg) so a later encoding can coexist with this one.
const hashAlg = 1

// genesis is the prev_hash of the first event.
var genesis [32]byte

// chainHash is SHA-256 over the canonical v1 encoding of a sealed event: a domain tag, the
// sequence number, every field of the event in a fixed order (strings and byte strings
// length-prefixed, integers fixed-width big-endian, the time in Unix microseconds, the details
// as canonical JSON) and the previous hash.
func chainHash(seq int64, ev *Event, prev []byte) [32]byte {
	b := make([]byte, 0, 512)
	b = append(b, "cobranca.audit.v1\x00"...)
	b = binary.BigEndian.AppendUint64(b, uint64(seq))
	b = binary.BigEndian.AppendUint64(b, uint64(ev.Time.UnixMicro()))
	b = appendContent(b, ev, detailsJSON(ev.Details))
	b = appendString(b, string(prev))
	return sha256.Sum256(b)
}

// appendContent appends the canonical encoding of an event's content, shared by the chain
// hash and the MAC: every field in a fixed order, strings length-prefixed, the duration in
// microseconds fixed-width big-endian, the details as canonical JSON (detailsJSON, which the
// caller may have at hand).
func appendContent(b []byte, ev *Event, details string) []byte {
	for _, s := range []string{
		ev.Name, ev.Tool, ev.Risk, ev.Subject, ev.Actor, ev.ClientID, ev.ACR, ev.RequestID,
		string(ev.Outcome), ev.FailureCode, ev.ArgsDigest, ev.ResultDigest,
	} {
		b = appendString(b, s)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(ev.Duration/time.Microsecond))
	return appendString(b, details)
}

func appendString(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}
