package auditlog

import (
	"bytes"
	"context"
	"crypto/hmac"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/cobranca/cobranca/internal/store"
)

// Kind says what is wrong with the chain at a sequence number.
type Kind string

// Kinds of problem Verify finds.
const (
	// Altered: the event's content no longer matches its hash.
	Altered Kind = "altered"
	// Missing: the event at this sequence number, or one just before it, was removed.
	Missing Kind = "missing"
	// Inserted: an event that was not in the chain was put at this sequence number.
	Inserted Kind = "inserted"
	// Reordered: the event at this sequence number belongs elsewhere in the chain.
	Reordered Kind = "reordered"
	// Rebuilt: the chain is consistent but differs from a signed checkpoint: it was
	// recomputed after a change at or before the checkpoint.
	Rebuilt Kind = "rebuilt"
	// Forged: the event's MAC does not match its content, or it has none after events that
	// had one: the server did not write it (or the audit key is not the server's).
	Forged Kind = "forged"
	// KeyMissing: the event names a key (its key id) that is not among the keys given, so
	// its MAC cannot be checked.
	KeyMissing Kind = "key_missing"
	// RetiredKey: the event's MAC is under a key retired earlier in the chain
	// (KeyRetiredEvent): forged with a leaked old key, or written by a replica not yet
	// given the new one.
	RetiredKey Kind = "retired_key"
	// Malformed: a line of an export (VerifyFile) is not what an export holds there.
	Malformed Kind = "malformed"
)

// Problem is the first thing wrong with the chain.
type Problem struct {
	Seq    int64
	Kind   Kind
	Detail string
	// Line is the line of an export (VerifyFile) that holds the problem, counting from 1;
	// 0 for a problem of the database's chain.
	Line int
}

func (p *Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("audit export broken at line %d (seq %d): %s: %s", p.Line, p.Seq, p.Kind, p.Detail)
	}
	return fmt.Sprintf("audit chain broken at seq %d: %s: %s", p.Seq, p.Kind, p.Detail)
}

// Report is the result of Verify.
type Report struct {
	Count   int64    // events that verified, from seq 1
	Head    Head     // the last event that verified
	Problem *Problem // nil when the whole chain verified

	// MACsChecked says whether the events' MACs were checked: false when the Log has no
	// audit key, in which case only the hash chain was verified.
	MACsChecked bool
	// Unauthenticated counts the verified events written before events carried a MAC
	// (migration 00020): the chain covers them, nothing proves the server wrote them.
	Unauthenticated int64
	// Lost is how many events the gap events in the chain (LostEvent) say a full spool lost.
	Lost int64
	// Keys counts the verified events under each key id; the events written before key ids
	// count under the key that verifies them. Nil when the MACs were not checked. String
	// lists it once there is more than one key.
	Keys map[string]int64
}

// Head is a position in the chain.
type Head struct {
	Seq  int64
	Hash []byte
}

// String formats the report as the CLI prints it: "OK <count> events, head <seq> <hash>",
// followed by how many were unauthenticated and whether the MACs were not checked, or
// "FAIL seq <n>: <kind>: <detail>".
func (r Report) String() string {
	if p := r.Problem; p != nil {
		if p.Line > 0 {
			return fmt.Sprintf("FAIL line %d (seq %d): %s: %s", p.Line, p.Seq, p.Kind, p.Detail)
		}
		return fmt.Sprintf("FAIL seq %d: %s: %s", p.Seq, p.Kind, p.Detail)
	}
	s := fmt.Sprintf("OK %d events, head %d %s", r.Count, r.Head.Seq, hex.EncodeToString(r.Head.Hash))
	if r.Unauthenticated > 0 {
		s += fmt.Sprintf(", %d unauthenticated (written before MACs)", r.Unauthenticated)
	}
	if r.Lost > 0 {
		s += fmt.Sprintf(", %d lost to a full spool (see the %s events)", r.Lost, LostEvent)
	}
	if len(r.Keys) > 1 { // after a rotation
		ids := slices.Sorted(maps.Keys(r.Keys))
		parts := make([]string, len(ids))
		for i, id := range ids {
			parts[i] = fmt.Sprintf("%s %d", id, r.Keys[id])
		}
		s += ", events per key: " + strings.Join(parts, ", ")
	}
	if !r.MACsChecked {
		s += "; MACs NOT checked: no audit key"
	}
	return s
}

// link is one row of the chain: a seal and the event it points at, if that still exists.
type link struct {
	seq        int64
	alg        int64
	prev, hash []byte
	present    bool
	ev         Event
	nonce, mac []byte // nil for an event written before MACs
	keyID      string // "" for an event written before key ids
	line       int    // the line of an export that holds it (VerifyFile); 0 in the database
	after      int64  // in an export, the seq of the line before, as the line says
}

// Verify seals what can be sealed, then walks the whole chain from seq 1 and reports the first
// problem, also checking the chain against each checkpoint (whose signatures the caller has
// checked, see ParseCheckpoint). A problem is a Report, not an error: the error is for failing
// to read the chain.
func (l *Log) Verify(ctx context.Context, checkpoints ...Checkpoint) (Report, error) {
	if _, err := l.Seal(ctx); err != nil {
		return Report{}, err
	}
	rows, err := l.db.Query(ctx, l.q.chain)
	if err != nil {
		return Report{}, fmt.Errorf("audit verify: %w", err)
	}
	defer rows.Close()
	next := func() (link, bool, error) {
		if !rows.Next() {
			return link{}, false, rows.Err()
		}
		var k link
		var id int64
		if err := scanLink(rows, &k, &id); err != nil {
			return link{}, false, err
		}
		k.present = id != 0
		return k, true, nil
	}

	w := l.newWalker(checkpoints)
	for {
		k, ok, err := next()
		if err != nil {
			return Report{}, fmt.Errorf("audit verify: %w", err)
		}
		if !ok {
			break
		}
		if err := w.step(k, next); err != nil {
			return Report{}, fmt.Errorf("audit verify: %w", err)
		}
		if w.rep.Problem != nil {
			return w.rep, nil
		}
	}
	rep := w.rep
	for _, c := range checkpoints {
		if c.Seq > rep.Head.Seq {
			rep.Problem = &Problem{Seq: rep.Head.Seq + 1, Kind: Missing, Detail: fmt.Sprintf("the chain ends at seq %d but a signed checkpoint has seq %d", rep.Head.Seq, c.Seq)}
			return rep, nil
		}
	}
	return rep, nil
}

// walker checks a chain link by link, in order: Verify over the database, VerifyFile over an
// export. One walk, so that both name the same problems the same way.
type walker struct {
	l             *Log
	rep           Report
	ks            keyState
	want          map[int64][]byte // the checkpoints' hashes by seq
	authenticated int64            // the seq of the first event with a MAC, 0 before it
	before        []byte           // the hash two back, for telling an insertion from a removal
	headLine      int              // the line of the head, in a file
	checkpoints   int              // checkpoints whose seq the walk met, and matched
}

func (l *Log) newWalker(checkpoints []Checkpoint) *walker {
	w := &walker{l: l, rep: Report{Head: Head{Hash: genesis[:]}, MACsChecked: l.macKey != nil},
		ks: keyState{retired: map[string]int64{}}, want: make(map[int64][]byte, len(checkpoints))}
	for _, c := range checkpoints {
		w.want[c.Seq] = c.Hash
	}
	if w.rep.MACsChecked {
		w.rep.Keys = map[string]int64{}
	}
	return w
}

// step checks k, the link after the walk's head, and sets w.rep.Problem when it does not
// verify; next reads the links after k, which telling a reordering from the rest needs.
func (w *walker) step(k link, next func() (link, bool, error)) error {
	rep := &w.rep
	fail := func(p *Problem) {
		if p.Line == 0 {
			p.Line = k.line
		}
		rep.Problem = p
	}
	if p := check(rep.Head, w.before, k); p != nil {
		if p.Kind == "" {
			// A broken link or hash: read the rest to tell a reordering from the rest.
			rest := []link{k}
			for {
				r, ok, err := next()
				if err != nil {
					return err
				}
				if !ok {
					break
				}
				rest = append(rest, r)
			}
			classify(p, rest)
		}
		if p.Kind == Inserted {
			// The last event counted as verified is the one that was inserted.
			rep.Count--
			rep.Head = Head{Seq: rep.Head.Seq - 1, Hash: w.before}
			p.Line = w.headLine
		}
		fail(p)
		return nil
	}
	if rep.MACsChecked {
		id, p := w.l.checkMAC(k, w.authenticated, &w.ks)
		if p != nil {
			fail(p)
			return nil
		}
		switch {
		case k.mac == nil:
			rep.Unauthenticated++
		case w.authenticated == 0:
			w.authenticated = k.seq
		}
		if id != "" {
			rep.Keys[id]++
		}
		if retired, ok := strings.CutPrefix(k.ev.Tool, keyObject); ok && k.ev.Name == KeyRetiredEvent && k.mac != nil && retired != id {
			if _, ok := w.ks.retired[retired]; !ok {
				w.ks.retired[retired] = k.seq
			}
		}
	}
	if h, ok := w.want[k.seq]; ok {
		if !bytes.Equal(h, k.hash) {
			fail(&Problem{Seq: k.seq, Kind: Rebuilt, Detail: fmt.Sprintf("hash %x differs from the signed checkpoint's %x: the chain was recomputed", k.hash, h)})
			return nil
		}
		w.checkpoints++
	}
	if k.ev.Name == LostEvent {
		rep.Lost += k.ev.Details["lostCount"]
	}
	w.before = rep.Head.Hash
	rep.Count++
	rep.Head = Head{Seq: k.seq, Hash: k.hash}
	w.headLine = k.line
	return nil
}

// check verifies one link against the head before it. A problem with an empty Kind is a broken
// link or hash still to be classified.
func check(h Head, before []byte, k link) *Problem {
	switch {
	case k.seq != h.Seq+1:
		return &Problem{Seq: h.Seq + 1, Kind: Missing, Detail: fmt.Sprintf("no event with this sequence number; the next is %d", k.seq)}
	case !k.present:
		return &Problem{Seq: k.seq, Kind: Missing, Detail: "the sealed event's row is gone"}
	case k.alg != hashAlg:
		return &Problem{Seq: k.seq, Kind: Altered, Detail: fmt.Sprintf("unknown hash algorithm %d", k.alg)}
	case !bytes.Equal(k.prev, h.Hash):
		if before != nil && bytes.Equal(k.prev, before) {
			return &Problem{Seq: h.Seq, Kind: Inserted, Detail: fmt.Sprintf("seq %d chains to seq %d: the event at %d was not in the chain", k.seq, h.Seq-1, h.Seq)}
		}
		return &Problem{Seq: k.seq, Detail: "prev_hash does not match the hash of the event before"}
	}
	if got := chainHash(k.seq, &k.ev, k.prev); !bytes.Equal(got[:], k.hash) {
		return &Problem{Seq: k.seq, Detail: "content does not match the hash"}
	}
	return nil
}

// keyState is what Verify learns of the keys along the chain.
type keyState struct {
	// legacy is the key id that verified the first event written before key ids, which
	// every such event must then verify under; "" until one is met.
	legacy string
	// retired holds each retired key id with the seq of its KeyRetiredEvent: the events
	// after it must not be under that key.
	retired map[string]int64
}

// checkMAC checks the MAC of an event whose chain link verified, authenticated being the seq
// of the first event that had a MAC (0: none yet), under the key the event names (an event
// written before key ids: under the legacy key), and returns that key's id. An event without a
// MAC is accepted only before the first that had one: the database refuses MAC-less events
// since migration 00020, so one after an authenticated event was inserted by someone who
// removed that guard. An event under a key retired earlier in the chain is reported.
func (l *Log) checkMAC(k link, authenticated int64, ks *keyState) (string, *Problem) {
	if k.mac == nil {
		if authenticated != 0 {
			return "", &Problem{Seq: k.seq, Kind: Forged, Detail: fmt.Sprintf("no MAC, after seq %d had one: not written by this server", authenticated)}
		}
		return "", nil
	}
	details := detailsJSON(k.ev.Details)
	id := k.keyID
	if id == "" {
		if ks.legacy == "" {
			for _, kid := range slices.Sorted(maps.Keys(l.verifyKeys)) {
				if hmac.Equal(macUnder(l.verifyKeys[kid], k.nonce, &k.ev, details), k.mac) {
					ks.legacy = kid
					break
				}
			}
			if ks.legacy == "" {
				return "", &Problem{Seq: k.seq, Kind: Forged, Detail: "MAC mismatch: not written by this server under any key given (the event names no key: one written before key ids, whose key may be missing)"}
			}
		}
		id = ks.legacy
	}
	key, ok := l.verifyKeys[id]
	if !ok {
		return "", &Problem{Seq: k.seq, Kind: KeyMissing, Detail: fmt.Sprintf("sealed under key %s, which is not among the keys given (COBRANCA_AUDIT_KEY): add it after the current key", id)}
	}
	var want []byte
	if id == l.keyID {
		want = l.eventMAC(nil, k.nonce, &k.ev, details) // the pooled HMAC state
	} else {
		want = macUnder(key, k.nonce, &k.ev, details)
	}
	if !hmac.Equal(want, k.mac) {
		detail := "MAC mismatch: not written by this server (or the audit key is not the server's)"
		if k.keyID == "" {
			detail = fmt.Sprintf("MAC mismatch under the legacy key %s (events before key ids): not written by this server", id)
		}
		return "", &Problem{Seq: k.seq, Kind: Forged, Detail: detail}
	}
	if at, ok := ks.retired[id]; ok && k.seq > at {
		return "", &Problem{Seq: k.seq, Kind: RetiredKey, Detail: fmt.Sprintf("sealed under key %s, retired at seq %d: forged with the old key, or a replica still runs with it", id, at)}
	}
	return id, nil
}

// classify names a broken link or hash at rest[0], knowing the links after it: content or a
// link that belongs to a later position was moved (reordered); a link to nothing known means
// events were removed before it (missing); otherwise the content was changed (altered).
func classify(p *Problem, rest []link) {
	k := rest[0]
	if p.Detail == "content does not match the hash" {
		for _, r := range rest[1:] {
			if h := chainHash(r.seq, &k.ev, r.prev); bytes.Equal(h[:], r.hash) {
				p.Kind, p.Detail = Reordered, fmt.Sprintf("holds the event sealed as seq %d", r.seq)
				return
			}
		}
		p.Kind = Altered
		return
	}
	for _, r := range rest[1:] {
		if bytes.Equal(k.prev, r.hash) {
			p.Kind, p.Detail = Reordered, fmt.Sprintf("chains to seq %d, which comes after it", r.seq)
			return
		}
	}
	p.Kind, p.Detail = Missing, "prev_hash matches no event: the event before it was removed"
}

func scanLink(r store.Row, k *link, id *int64) error {
	var timeUS, durUS, serverUS int64
	var outcome, details string
	err := r.Scan(&k.seq, &k.alg, &k.prev, &k.hash, id, &timeUS, &k.ev.Name, &k.ev.Tool, &k.ev.Risk,
		&k.ev.Subject, &k.ev.Actor, &k.ev.ClientID, &k.ev.ACR, &k.ev.RequestID, &outcome,
		&k.ev.FailureCode, &k.ev.ArgsDigest, &k.ev.ResultDigest, &durUS, &serverUS, &details, &k.nonce, &k.mac, &k.keyID)
	if err != nil {
		return err
	}
	k.ev.Seq = k.seq
	setTimes(&k.ev, timeUS, durUS, serverUS)
	k.ev.Outcome = Outcome(outcome)
	k.ev.Details, err = parseDetails(details)
	if err != nil {
		// Details that no longer parse were altered.
		k.ev.Details = map[string]int64{"\x00unparseable": 0}
	}
	return nil
}
