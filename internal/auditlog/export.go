package auditlog

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
	"strings"
	"time"
)

// An export is JSON Lines: a header line, one line per sealed event in seq order, and an end
// line. An event line holds everything its seal and its event row hold (seq, hashes, every
// field, the nonce, MAC and key id), so VerifyFile checks it with the chain's own hash and
// MAC code (chainHash, macUnder), offline. Each event line also names the seq of the line
// before it ("after", 0 on the first), so a removed line is named even where the export
// skips events (a filter). The end line counts the events and carries an HMAC, under the
// audit key, over every byte before it: a line cut off the end, or anything changed, fails it.
// docs/operations.md describes the format.
const (
	exportFormat  = "cobranca.audit.export"
	exportVersion = 1
	exportMACTag  = "cobranca.audit.export.v1\x00"
	// maxExportLine bounds a line VerifyFile reads: an event's fields are bounded
	// (MaxFieldBytes each), a line longer than this was not written by Export.
	maxExportLine = 64 << 10
	exportBatch   = 1000
)

type exportHeader struct {
	Type       string      `json:"type"` // "header"
	Format     string      `json:"format"`
	Version    int         `json:"version"`
	ExportedAt time.Time   `json:"exportedAt"`
	Filter     TrailFilter `json:"filter"`
	// Gaps: the filter picks events, so consecutive lines may be apart in the chain.
	Gaps bool `json:"gaps"`
	// KeysRetired are the audit keys retired in the chain up to the export's last event, by
	// key id, with the seq of the event that retired each: VerifyFile reports an event after
	// it under that key, as Verify does, also when the retiring event is not in the export.
	KeysRetired map[string]int64 `json:"keysRetired,omitempty"`
}

type exportEvent struct {
	Type     string   `json:"type"` // "event"
	Seq      int64    `json:"seq"`
	After    int64    `json:"after"`
	Alg      int64    `json:"alg"`
	PrevHash hexBytes `json:"prevHash"`
	Hash     hexBytes `json:"hash"`
	// Missing: the seal's event row is gone from the store.
	Missing      bool             `json:"missing,omitempty"`
	Time         time.Time        `json:"time,omitzero"`
	ServerTime   time.Time        `json:"serverTime,omitzero"`
	Event        string           `json:"event,omitempty"`
	Tool         string           `json:"tool,omitempty"`
	Risk         string           `json:"risk,omitempty"`
	Subject      string           `json:"subject,omitempty"`
	Actor        string           `json:"actor,omitempty"`
	ClientID     string           `json:"clientId,omitempty"`
	ACR          string           `json:"acr,omitempty"`
	RequestID    string           `json:"requestId,omitempty"`
	Outcome      Outcome          `json:"outcome,omitempty"`
	FailureCode  string           `json:"failureCode,omitempty"`
	ArgsDigest   string           `json:"argsDigest,omitempty"`
	ResultDigest string           `json:"resultDigest,omitempty"`
	DurationUS   int64            `json:"durationUs,omitempty"`
	Details      map[string]int64 `json:"details,omitempty"`
	Nonce        hexBytes         `json:"nonce,omitempty"`
	MAC          hexBytes         `json:"mac,omitempty"`
	KeyID        string           `json:"keyId,omitempty"`
}

type exportEnd struct {
	Type   string   `json:"type"` // "end"
	Events int64    `json:"events"`
	KeyID  string   `json:"keyId"`
	MAC    hexBytes `json:"mac"`
}

// hexBytes is a byte string written in hex.
type hexBytes []byte

func (b hexBytes) MarshalText() ([]byte, error) { return hex.AppendEncode(nil, b), nil }
func (b *hexBytes) UnmarshalText(t []byte) error {
	d, err := hex.AppendDecode(make([]byte, 0, len(t)/2), t)
	*b = d
	return err
}

// ExportSummary says what Export wrote.
type ExportSummary struct {
	Events      int64 // event lines
	First, Last int64 // their first and last seq; 0 when none
}

// Export writes the sealed events f picks to w as JSON Lines that VerifyFile checks offline,
// under the Log's audit key (ErrNoKey without one). Without a filter on content (tool, risk,
// outcome, subject, actor, client) it writes a stretch of the chain with nothing left out:
// from the first event written at or after f.Since to the last written before f.Until, so on
// PostgreSQL, where the chain is in commit order, a few events at either end may have been
// written just outside that window. With one, it writes the events of that stretch that the
// filter picks, each checked on its own and the whole by the end line. Call Seal first for
// the latest events: the unsealed ones are not exported.
func (l *Log) Export(ctx context.Context, w io.Writer, f TrailFilter) (ExportSummary, error) {
	if l.macKey == nil {
		return ExportSummary{}, ErrNoKey
	}
	if err := f.Check(); err != nil {
		return ExportSummary{}, fmt.Errorf("audit export: %w", err)
	}
	d := l.db.Dialect()
	var from, to int64 // the seq range: from < seq <= to
	err := l.db.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM audit_seal`).Scan(&to)
	if err != nil {
		return ExportSummary{}, fmt.Errorf("audit export: %w", err)
	}
	const sealed = `FROM audit_seal s JOIN audit_event e ON e.id = s.event_id WHERE e.occurred_at `
	if !f.Since.IsZero() {
		var first int64
		err := l.db.QueryRow(ctx, `SELECT coalesce(min(s.seq), 0) `+sealed+`>= $1`, timeArg(d, f.Since)).Scan(&first)
		if err != nil {
			return ExportSummary{}, fmt.Errorf("audit export: %w", err)
		}
		if first == 0 {
			first = to + 1 // nothing written since
		}
		from = first - 1
	}
	if !f.Until.IsZero() {
		err := l.db.QueryRow(ctx, `SELECT coalesce(max(s.seq), 0) `+sealed+`< $1`, timeArg(d, f.Until)).Scan(&to)
		if err != nil {
			return ExportSummary{}, fmt.Errorf("audit export: %w", err)
		}
	}
	retired := map[string]int64{}
	rows, err := l.db.Query(ctx, `SELECT e.tool, s.seq FROM audit_seal s JOIN audit_event e ON e.id = s.event_id WHERE e.event = $1 AND s.seq <= $2 ORDER BY s.seq`, KeyRetiredEvent, to)
	if err != nil {
		return ExportSummary{}, fmt.Errorf("audit export: %w", err)
	}
	for rows.Next() {
		var tool string
		var seq int64
		if err := rows.Scan(&tool, &seq); err != nil {
			rows.Close()
			return ExportSummary{}, fmt.Errorf("audit export: %w", err)
		}
		if id, ok := strings.CutPrefix(tool, keyObject); ok {
			if _, seen := retired[id]; !seen {
				retired[id] = seq
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return ExportSummary{}, fmt.Errorf("audit export: %w", err)
	}

	mac := hmac.New(sha256.New, l.macKey)
	mac.Write([]byte(exportMACTag))
	bw := bufio.NewWriterSize(w, 64<<10)
	out := io.MultiWriter(bw, mac)
	writeLine := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(append(b, '\n'))
		return err
	}
	pick := f
	pick.Since, pick.Until = time.Time{}, time.Time{} // the seq range holds them
	h := exportHeader{Type: "header", Format: exportFormat, Version: exportVersion,
		ExportedAt: l.now().UTC().Truncate(time.Microsecond), Filter: f, Gaps: f.picks()}
	if len(retired) > 0 {
		h.KeysRetired = retired
	}
	if err := writeLine(h); err != nil {
		return ExportSummary{}, fmt.Errorf("audit export: %w", err)
	}
	var sum ExportSummary
	for after := from; after < to; {
		conds, args := pick.conditions(d, []string{"s.seq > $1", "s.seq <= $2"}, []any{after, to})
		args = append(args, int64(exportBatch))
		sql := l.q.chainSelect + "\nWHERE " + strings.Join(conds, " AND ") + "\nORDER BY s.seq LIMIT $" + strconv.Itoa(len(args))
		n, err := l.exportBatch(ctx, sql, args, &sum, writeLine)
		if err != nil {
			return sum, fmt.Errorf("audit export: %w", err)
		}
		if n < exportBatch {
			break
		}
		after = sum.Last
	}
	mac.Write(endMACInput(sum.Events))
	if err := writeLine(exportEnd{Type: "end", Events: sum.Events, KeyID: l.keyID, MAC: mac.Sum(nil)}); err != nil {
		return sum, fmt.Errorf("audit export: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return sum, fmt.Errorf("audit export: %w", err)
	}
	return sum, nil
}

// exportBatch writes the event lines of one batch of the export's query and returns how
// many it read.
func (l *Log) exportBatch(ctx context.Context, sql string, args []any, sum *ExportSummary, writeLine func(any) error) (int, error) {
	rows, err := l.db.Query(ctx, sql, args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var k link
		var id int64
		if err := scanLink(rows, &k, &id); err != nil {
			return n, err
		}
		n++
		e := exportEvent{Type: "event", Seq: k.seq, After: sum.Last, Alg: k.alg, PrevHash: k.prev, Hash: k.hash}
		if id == 0 {
			e.Missing = true
		} else {
			ev := &k.ev
			e.Time, e.ServerTime = ev.Time, ev.ServerTime
			e.Event, e.Tool, e.Risk, e.Subject, e.Actor, e.ClientID = ev.Name, ev.Tool, ev.Risk, ev.Subject, ev.Actor, ev.ClientID
			e.ACR, e.RequestID, e.Outcome, e.FailureCode = ev.ACR, ev.RequestID, ev.Outcome, ev.FailureCode
			e.ArgsDigest, e.ResultDigest, e.DurationUS, e.Details = ev.ArgsDigest, ev.ResultDigest, ev.Duration.Microseconds(), ev.Details
			e.Nonce, e.MAC, e.KeyID = k.nonce, k.mac, k.keyID
		}
		if err := writeLine(e); err != nil {
			return n, err
		}
		if sum.First == 0 {
			sum.First = k.seq
		}
		sum.Last = k.seq
		sum.Events++
	}
	return n, rows.Err()
}

// endMACInput is what the end line's MAC covers after every byte before the end line.
func endMACInput(events int64) []byte {
	return []byte("events " + strconv.FormatInt(events, 10) + "\n")
}

// FileReport is the result of VerifyFile.
type FileReport struct {
	Report
	// Lines is how many lines were read.
	Lines int
	// First is the seq of the first event line (0: none).
	First int64
	// Gaps: the export holds the events a filter picked, apart in the chain.
	Gaps bool
	// Checkpoints counts the checkpoints whose seq is in the export, each matched; Outside,
	// those before or after it, which the export cannot tell about.
	Checkpoints, Outside int
}

// String formats the report as `cobranca audit verify --file` prints it: "OK <count> events,
// seq <first> to <head> …" or "FAIL line <n> (seq <s>): <kind>: <detail>".
func (r FileReport) String() string {
	if r.Problem != nil {
		return r.Report.String()
	}
	s := r.Report.String()
	span := fmt.Sprintf("OK %d events, seq %d to %d", r.Count, r.First, r.Head.Seq)
	if r.Gaps {
		span += " (a filter's: lines apart in the chain)"
	}
	s = span + strings.TrimPrefix(s, fmt.Sprintf("OK %d events", r.Count))
	if r.Checkpoints+r.Outside > 0 {
		s += fmt.Sprintf("; checkpoints: %d matched, %d outside the export", r.Checkpoints, r.Outside)
	}
	return s
}

// VerifyFile checks an export (Export) offline: each event line's hash over its content and
// the line before it (the chain's own chainHash), its MAC under the audit key it names (key,
// the current audit key, and oldKeys, the earlier ones: nil key checks no MAC), the lines'
// order and continuity, each checkpoint whose seq the export holds, and the end line's count
// and MAC. It reports the first problem, naming its line, as Verify reports one of the chain;
// the error is for failing to read r.
func VerifyFile(r io.Reader, key []byte, oldKeys [][]byte, checkpoints ...Checkpoint) (FileReport, error) {
	l := &Log{}
	if err := l.setKeys(key, oldKeys); err != nil {
		return FileReport{}, err
	}
	fr := &fileReader{r: bufio.NewReaderSize(r, maxExportLine)}
	if l.macKey != nil {
		fr.macs = map[string]hash.Hash{}
		for id, k := range l.verifyKeys {
			m := hmac.New(sha256.New, k)
			m.Write([]byte(exportMACTag))
			fr.macs[id] = m
		}
	}
	w := l.newWalker(checkpoints)
	rep := FileReport{}
	done := func() (FileReport, error) {
		rep.Report, rep.Lines = w.rep, fr.line
		for _, c := range checkpoints {
			if c.Seq < rep.First || c.Seq > rep.Head.Seq || rep.First == 0 {
				rep.Outside++
			}
		}
		rep.Checkpoints = w.checkpoints
		return rep, nil
	}
	fail := func(p *Problem) (FileReport, error) {
		w.rep.Problem = p
		return done()
	}

	h, p, err := fr.header()
	if err != nil {
		return FileReport{}, err
	}
	if p != nil {
		return fail(p)
	}
	rep.Gaps = h.Gaps
	for id, seq := range h.KeysRetired {
		w.ks.retired[id] = seq
	}
	// rest reads the lines after a broken link for step to classify it: a malformed line ends
	// them, the problem being the link's.
	rest := func() (link, bool, error) {
		k, ok, err := fr.next()
		var p *Problem
		if errors.As(err, &p) {
			return link{}, false, nil
		}
		return k, ok, err
	}
	var prev int64 // the seq of the line before
	for {
		k, ok, err := fr.next()
		var p *Problem
		if errors.As(err, &p) {
			return fail(p)
		}
		if err != nil {
			return FileReport{}, err
		}
		if !ok {
			break
		}
		first := rep.First == 0
		switch {
		case !first && k.seq == prev:
			return fail(&Problem{Line: k.line, Seq: k.seq, Kind: Inserted, Detail: "repeats the seq of the line before"})
		case k.after != prev:
			p := &Problem{Line: k.line, Seq: k.seq, Kind: Missing, Detail: fmt.Sprintf("follows seq %d, which is not the line before it: that line was removed", k.after)}
			if prev == 0 {
				p.Detail = fmt.Sprintf("follows seq %d, but it is the first event line: the lines before it were removed", k.after)
			}
			for {
				r, ok, err := rest()
				if err != nil {
					return FileReport{}, err
				}
				if !ok {
					break
				}
				if r.seq == k.after {
					p.Kind, p.Detail = Reordered, fmt.Sprintf("follows seq %d, which is on line %d, after it: the lines are out of order", k.after, r.line)
					break
				}
			}
			return fail(p)
		case !first && k.seq < prev:
			return fail(&Problem{Line: k.line, Seq: k.seq, Kind: Reordered, Detail: fmt.Sprintf("comes after seq %d: the lines are out of order", prev)})
		case first || h.Gaps && k.seq > prev+1:
			// The first line, or one after a gap the filter left: its link to the chain
			// before it is taken as it says, its content and MAC are checked.
			w.rep.Head, w.before = Head{Seq: k.seq - 1, Hash: k.prev}, nil
		}
		if first {
			rep.First = k.seq
		}
		if err := w.step(k, rest); err != nil {
			return FileReport{}, err
		}
		if w.rep.Problem != nil {
			return done()
		}
		prev = k.seq
	}
	if p := fr.finish(w.rep.Count, w.rep.Head.Seq); p != nil {
		return fail(p)
	}
	return done()
}

// fileReader reads an export's lines, feeding the end line's MAC as it goes.
type fileReader struct {
	r    *bufio.Reader
	line int
	macs map[string]hash.Hash // the end line's MAC under each key; nil: not checked
	end  *exportEnd           // the end line, once read
}

// read returns the next line, without its newline, having fed it to the MACs; io.EOF after
// the last. A problem is returned as a *Problem error.
func (fr *fileReader) read() ([]byte, error) {
	b, err := fr.r.ReadSlice('\n')
	if len(b) == 0 && err == io.EOF {
		return nil, io.EOF
	}
	fr.line++
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		return nil, &Problem{Line: fr.line, Kind: Malformed, Detail: fmt.Sprintf("longer than %d bytes", maxExportLine)}
	case err == io.EOF:
		return nil, &Problem{Line: fr.line, Kind: Malformed, Detail: "no newline at the end: the file was cut short"}
	case err != nil:
		return nil, err
	}
	return b[:len(b)-1], nil
}

func (fr *fileReader) feed(b []byte) {
	for _, m := range fr.macs {
		m.Write(b)
		m.Write([]byte{'\n'})
	}
}

func decodeLine(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

func (fr *fileReader) header() (exportHeader, *Problem, error) {
	var h exportHeader
	b, err := fr.read()
	var p *Problem
	switch {
	case errors.As(err, &p):
		return h, p, nil
	case err == io.EOF:
		return h, &Problem{Line: 1, Kind: Malformed, Detail: "the file is empty"}, nil
	case err != nil:
		return h, nil, err
	}
	fr.feed(b)
	if err := decodeLine(b, &h); err != nil {
		return h, &Problem{Line: 1, Kind: Malformed, Detail: "not an export's header: " + err.Error()}, nil
	}
	if h.Type != "header" || h.Format != exportFormat {
		return h, &Problem{Line: 1, Kind: Malformed, Detail: fmt.Sprintf("not an export's header: want type \"header\" and format %q", exportFormat)}, nil
	}
	if h.Version != exportVersion {
		return h, &Problem{Line: 1, Kind: Malformed, Detail: fmt.Sprintf("export version %d: this cobranca reads version %d", h.Version, exportVersion)}, nil
	}
	return h, nil, nil
}

// typeOnly reads a line's type.
type typeOnly struct {
	Type string `json:"type"`
}

// next reads the next event line as a link; false at the end line (kept in fr.end) or at
// the end of the file.
func (fr *fileReader) next() (link, bool, error) {
	if fr.end != nil {
		return link{}, false, nil
	}
	b, err := fr.read()
	if err == io.EOF {
		return link{}, false, nil // finish reports the missing end line
	}
	if err != nil {
		return link{}, false, err
	}
	bad := func(detail string) (link, bool, error) {
		return link{}, false, &Problem{Line: fr.line, Kind: Malformed, Detail: detail}
	}
	var t typeOnly
	if err := json.Unmarshal(b, &t); err != nil {
		return bad("not JSON: " + err.Error())
	}
	switch t.Type {
	case "end":
		var e exportEnd
		if err := decodeLine(b, &e); err != nil {
			return bad("not an export's end line: " + err.Error())
		}
		fr.end = &e
		return link{}, false, nil
	case "event":
	default:
		return bad(fmt.Sprintf("type %q: want \"event\" or \"end\"", t.Type))
	}
	fr.feed(b)
	var e exportEvent
	if err := decodeLine(b, &e); err != nil {
		return bad("not an export's event line: " + err.Error())
	}
	if e.Seq < 1 || e.After < 0 {
		return bad("seq must be at least 1 and after not negative")
	}
	k := link{seq: e.Seq, alg: e.Alg, prev: e.PrevHash, hash: e.Hash, present: !e.Missing, line: fr.line,
		nonce: e.Nonce, mac: e.MAC, keyID: e.KeyID, after: e.After}
	k.ev = Event{Seq: e.Seq, Time: e.Time.UTC(), Name: e.Event, Tool: e.Tool, Risk: e.Risk, Subject: e.Subject,
		Actor: e.Actor, ClientID: e.ClientID, ACR: e.ACR, RequestID: e.RequestID, Outcome: e.Outcome,
		FailureCode: e.FailureCode, ArgsDigest: e.ArgsDigest, ResultDigest: e.ResultDigest,
		Duration: time.Duration(e.DurationUS) * time.Microsecond, Details: e.Details}
	if !e.ServerTime.IsZero() {
		k.ev.ServerTime = e.ServerTime.UTC()
	}
	if len(k.ev.Details) == 0 {
		k.ev.Details = nil
	}
	return k, true, nil
}

// finish checks the end line, once every event line verified: that there is one, that
// nothing follows it, its count (count, the event lines read; last, the last one's seq) and
// its MAC.
func (fr *fileReader) finish(count, last int64) *Problem {
	if fr.end == nil {
		return &Problem{Line: fr.line + 1, Seq: last, Kind: Missing, Detail: "the file ends without its end line: it was cut short"}
	}
	endLine := fr.line
	if b, err := fr.read(); err != io.EOF {
		if err == nil && len(bytes.TrimSpace(b)) == 0 {
			return &Problem{Line: fr.line, Seq: last, Kind: Malformed, Detail: "an empty line after the end line"}
		}
		return &Problem{Line: fr.line, Seq: last, Kind: Inserted, Detail: "a line after the end line"}
	}
	switch e := fr.end; {
	case e.Events > count:
		return &Problem{Line: endLine, Seq: last, Kind: Missing, Detail: fmt.Sprintf("the export had %d events, the file holds %d: the last lines were removed", e.Events, count)}
	case e.Events < count:
		return &Problem{Line: endLine, Seq: last, Kind: Inserted, Detail: fmt.Sprintf("the export had %d events, the file holds %d: lines were added", e.Events, count)}
	case fr.macs == nil:
		return nil // no key: MACs not checked, as the report says
	}
	m, ok := fr.macs[fr.end.KeyID]
	if !ok {
		return &Problem{Line: endLine, Seq: last, Kind: KeyMissing, Detail: fmt.Sprintf("the export's MAC is under key %s, which is not among the keys given (COBRANCA_AUDIT_KEY)", fr.end.KeyID)}
	}
	m.Write(endMACInput(count))
	if !hmac.Equal(m.Sum(nil), fr.end.MAC) {
		return &Problem{Line: endLine, Seq: last, Kind: Forged, Detail: "the end line's MAC does not match the lines before it: the file was changed after it was exported"}
	}
	return nil
}
