package auditlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cobranca/cobranca/internal/store"
	"github.com/cobranca/cobranca/internal/store/storetest"
)

// exportAll exports the whole sealed chain of l.
func exportAll(t testing.TB, l *Log) []byte {
	t.Helper()
	return export(t, l, TrailFilter{})
}

func export(t testing.TB, l *Log, f TrailFilter) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := l.Export(context.Background(), &buf, f); err != nil {
		t.Fatalf("Export(%+v): %v", f, err)
	}
	return buf.Bytes()
}

func verifyExport(t testing.TB, file []byte, key []byte, cps ...Checkpoint) FileReport {
	t.Helper()
	rep, err := VerifyFile(bytes.NewReader(file), key, nil, cps...)
	if err != nil {
		t.Fatalf("VerifyFile: %v", err)
	}
	return rep
}

// variedEvent is sampleEvent(i) with a tool, risk, outcome and subject that vary with i, for
// filters to pick some.
func variedEvent(i int) Event {
	ev := sampleEvent(i)
	ev.Tool = []string{"collections.analyze_portfolio", "collections.send_reminder", "collections.list_invoices"}[i%3]
	ev.Risk = []string{"low", "critical", "low"}[i%3]
	ev.Outcome = []Outcome{Allowed, Allowed, Denied, Failed, Allowed}[i%5]
	ev.Subject = fmt.Sprintf("user-%d", i%4)
	return ev
}

// TestExportVerifyRoundTrip: on both stores, an export of the whole chain, of a time window
// and of a filter verifies offline, with the events, hashes and MACs the store holds.
func TestExportVerifyRoundTrip(t *testing.T) {
	_, signer, _ := ed25519.GenerateKey(rand.Reader)
	eachStore(t, func(t *testing.T, f storetest.Fixture, db store.DB) {
		ctx := context.Background()
		clock := fixedTime
		l, err := New(db, testKey, Options{Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
		if err != nil {
			t.Fatal(err)
		}
		const n = 30
		for i := range n {
			if err := l.Record(ctx, variedEvent(i)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := l.SealCommitted(ctx); err != nil {
			t.Fatal(err)
		}
		doc, _, err := l.Checkpoint(ctx, signer)
		if err != nil {
			t.Fatal(err)
		}
		cp, err := ParseCheckpoint(doc, signer.Public().(ed25519.PublicKey))
		if err != nil {
			t.Fatal(err)
		}
		events, err := l.Events(ctx, 0, 100)
		if err != nil || len(events) != n {
			t.Fatalf("Events() = %d events, %v", len(events), err)
		}
		// The whole chain: every event line is the event the store holds.
		file := exportAll(t, l)
		rep := verifyExport(t, file, testKey, cp)
		if rep.Problem != nil || rep.Count != n || rep.First != 1 || rep.Head.Seq != n || rep.Checkpoints != 1 || !rep.MACsChecked {
			t.Fatalf("VerifyFile(whole chain) = %+v", rep)
		}
		if want := fmt.Sprintf("OK %d events, seq 1 to %d, head %d ", n, n, n); !strings.HasPrefix(rep.String(), want) || !strings.HasSuffix(rep.String(), "checkpoints: 1 matched, 0 outside the export") {
			t.Errorf("String() = %q, want it to start %q and name the checkpoint", rep, want)
		}
		lines := strings.Split(strings.TrimSuffix(string(file), "\n"), "\n")
		if len(lines) != n+2 {
			t.Fatalf("the export has %d lines, want a header, %d events and an end line", len(lines), n)
		}
		for i, ev := range events {
			var e exportEvent
			if err := json.Unmarshal([]byte(lines[i+1]), &e); err != nil {
				t.Fatal(err)
			}
			got := Event{Seq: e.Seq, Time: e.Time, ServerTime: e.ServerTime, Name: e.Event, Tool: e.Tool, Risk: e.Risk,
				Subject: e.Subject, Actor: e.Actor, ClientID: e.ClientID, ACR: e.ACR, RequestID: e.RequestID, Outcome: e.Outcome,
				FailureCode: e.FailureCode, ArgsDigest: e.ArgsDigest, ResultDigest: e.ResultDigest,
				Duration: time.Duration(e.DurationUS) * time.Microsecond, Details: e.Details}
			if diff := cmp.Diff(ev, got); diff != "" {
				t.Errorf("line %d (-store +export):\n%s", i+2, diff)
			}
			if len(e.Nonce) != nonceLen || len(e.MAC) != macLen || e.KeyID != KeyID(testKey) || len(e.Hash) != 32 || e.After != int64(i) {
				t.Errorf("line %d: nonce %x, MAC %x, key %q, hash %x, after %d: want them as stored", i+2, e.Nonce, e.MAC, e.KeyID, e.Hash, e.After)
			}
		}

		// A time window: the stretch of the chain from the first event at or after since
		// to the last before until.
		since, until := events[9].Time, events[20].Time
		rep = verifyExport(t, export(t, l, TrailFilter{Since: since, Until: until}), testKey, cp)
		if rep.Problem != nil || rep.First != 10 || rep.Head.Seq != 20 || rep.Count != 11 || rep.Outside != 1 {
			t.Errorf("VerifyFile(window) = %+v, want seq 10 to 20, the checkpoint outside", rep)
		}

		// A filter: the events it picks, apart in the chain, each checked.
		pick := TrailFilter{Tool: "collections.send_reminder", Outcome: Allowed}
		var want []int64
		for _, ev := range events {
			if ev.Tool == pick.Tool && ev.Outcome == pick.Outcome {
				want = append(want, ev.Seq)
			}
		}
		file = export(t, l, pick)
		rep = verifyExport(t, file, testKey)
		if rep.Problem != nil || !rep.Gaps || rep.Count != int64(len(want)) || rep.First != want[0] || rep.Head.Seq != want[len(want)-1] {
			t.Errorf("VerifyFile(filter) = %+v, want the %d events %v", rep, len(want), want)
		}

		// Nothing in the window: a header and an end line, which verify.
		rep = verifyExport(t, export(t, l, TrailFilter{Since: time.Now().Add(24 * time.Hour)}), testKey)
		if rep.Problem != nil || rep.Count != 0 || rep.Lines != 2 {
			t.Errorf("VerifyFile(empty window) = %+v", rep)
		}

		// Without the key nothing can be exported: the end line needs its MAC.
		keyless, _ := New(l.db, nil, Options{})
		if _, err := keyless.Export(ctx, &bytes.Buffer{}, TrailFilter{}); !errors.Is(err, ErrNoKey) {
			t.Errorf("Export without a key = %v, want ErrNoKey", err)
		}
		// Verified without the key: the chain only, and the report says so.
		rep, err = VerifyFile(bytes.NewReader(exportAll(t, l)), nil, nil)
		if err != nil || rep.Problem != nil || rep.MACsChecked || !strings.Contains(rep.String(), "MACs NOT checked") {
			t.Errorf("VerifyFile(no key) = %v, %v; want OK with the MACs not checked", rep, err)
		}
	})
}

// TestExportBadFilter: a filter the trail could not hold is refused, naming the field.
func TestExportBadFilter(t *testing.T) {
	l := newLog(t, storetest.SQLite(t))
	for _, tt := range []struct {
		f    TrailFilter
		want string
	}{
		{TrailFilter{Outcome: "won"}, "outcome"},
		{TrailFilter{Tool: strings.Repeat("x", MaxFieldBytes+1)}, "tool"},
		{TrailFilter{Subject: "a\x00b"}, "subject"},
		{TrailFilter{Since: fixedTime, Until: fixedTime}, "since"},
	} {
		_, err := l.Export(context.Background(), &bytes.Buffer{}, tt.f)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Export(%+v) = %v, want an error naming %s", tt.f, err, tt.want)
		}
		if _, err := l.Trail(context.Background(), tt.f, "", 10); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Trail(%+v) = %v, want an error naming %s", tt.f, err, tt.want)
		}
	}
}

// exportLines is an export of 10 events (lines 2 to 11) and its checkpoint, as lines.
func exportLines(t *testing.T) ([]string, Checkpoint) {
	t.Helper()
	_, signer, _ := ed25519.GenerateKey(rand.Reader)
	l := newLog(t, storetest.SQLite(t))
	appendN(t, l, 10)
	doc, _, err := l.Checkpoint(context.Background(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := ParseCheckpoint(doc, signer.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(exportAll(t, l)), "\n"), "\n"), cp
}

// editLine decodes line i (0-based) as an event line, lets edit change it and encodes it.
func editLine(t *testing.T, lines []string, i int, edit func(e *exportEvent)) {
	t.Helper()
	var e exportEvent
	if err := json.Unmarshal([]byte(lines[i]), &e); err != nil {
		t.Fatal(err)
	}
	edit(&e)
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	lines[i] = string(b)
}

// TestVerifyFileTamper: every change to an export fails VerifyFile, which names the line
// and what is wrong, as Verify names the seq.
func TestVerifyFileTamper(t *testing.T) {
	otherKey := []byte("another key of at least 32 bytes!!")
	tests := []struct {
		name     string
		edit     func(t *testing.T, lines []string) []string
		key      []byte
		wantLine int
		wantSeq  int64
		wantKind Kind
	}{
		{"a field changed", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 4, func(e *exportEvent) { e.Outcome = Allowed })
			return ls
		}, nil, 5, 4, Altered},
		{"a count changed", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 7, func(e *exportEvent) { e.Details["invoiceCount"]++ })
			return ls
		}, nil, 8, 7, Altered},
		{"a time changed", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 3, func(e *exportEvent) { e.Time = e.Time.Add(time.Microsecond) })
			return ls
		}, nil, 4, 3, Altered},
		{"the field changed as text, the JSON kept", func(t *testing.T, ls []string) []string {
			ls[6] = strings.Replace(ls[6], `"subject":"user-5"`, `"subject":"user-6"`, 1)
			return ls
		}, nil, 7, 6, Altered},
		{"a field changed and the hashes recomputed", func(t *testing.T, ls []string) []string {
			// What an attacker who knows the chain's algorithm, and not the key, can do.
			var prev []byte
			for i := 5; i <= 10; i++ {
				editLine(t, ls, i, func(e *exportEvent) {
					if i == 5 {
						e.Subject = "someone-else"
						prev = e.PrevHash
					}
					e.PrevHash = prev
					ev := Event{Time: e.Time, ServerTime: e.ServerTime, Name: e.Event, Tool: e.Tool, Risk: e.Risk, Subject: e.Subject, Actor: e.Actor,
						ClientID: e.ClientID, ACR: e.ACR, RequestID: e.RequestID, Outcome: e.Outcome, FailureCode: e.FailureCode,
						ArgsDigest: e.ArgsDigest, ResultDigest: e.ResultDigest, Duration: time.Duration(e.DurationUS) * time.Microsecond, Details: e.Details}
					h := chainHash(e.Seq, &ev, prev)
					e.Hash, prev = h[:], h[:]
				})
			}
			return ls
		}, nil, 6, 5, Forged},
		{"a server time changed (the MAC's, not the chain's)", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 2, func(e *exportEvent) { e.ServerTime = e.ServerTime.Add(time.Second) })
			return ls
		}, nil, 3, 2, Forged},
		{"a wrong MAC", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 9, func(e *exportEvent) { e.MAC[0] ^= 1 })
			return ls
		}, nil, 10, 9, Forged},
		{"a MAC removed", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 9, func(e *exportEvent) { e.MAC, e.Nonce, e.KeyID = nil, nil, "" })
			return ls
		}, nil, 10, 9, Forged},
		{"a key id changed", func(t *testing.T, ls []string) []string {
			editLine(t, ls, 2, func(e *exportEvent) { e.KeyID = "0123456789abcdef" })
			return ls
		}, nil, 3, 2, KeyMissing},
		{"verified under another key", func(t *testing.T, ls []string) []string { return ls }, otherKey, 2, 1, KeyMissing},
		{"a line removed", func(t *testing.T, ls []string) []string {
			return append(ls[:4:4], ls[5:]...)
		}, nil, 5, 5, Missing},
		{"the first event line removed", func(t *testing.T, ls []string) []string {
			return append(ls[:1:1], ls[2:]...)
		}, nil, 2, 2, Missing},
		{"the last event line removed", func(t *testing.T, ls []string) []string {
			return append(ls[:10:10], ls[11:]...)
		}, nil, 11, 9, Missing},
		{"the end line removed", func(t *testing.T, ls []string) []string { return ls[:11] }, nil, 12, 10, Missing},
		{"the file cut in a line", func(t *testing.T, ls []string) []string {
			return append(ls[:6:6], ls[6][:40])
		}, nil, 7, 0, Malformed},
		{"a line removed and the next one's after mended", func(t *testing.T, ls []string) []string {
			ls = append(ls[:4:4], ls[5:]...)
			editLine(t, ls, 4, func(e *exportEvent) { e.After-- })
			return ls
		}, nil, 5, 4, Missing},
		{"a line removed and covered up, as a filter's export", func(t *testing.T, ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"gaps":false`, `"gaps":true`, 1)
			ls = append(ls[:4:4], ls[5:]...)
			editLine(t, ls, 4, func(e *exportEvent) { e.After-- })
			ls[10] = strings.Replace(ls[10], `"events":10`, `"events":9`, 1)
			return ls
		}, nil, 11, 10, Forged},
		{"two lines swapped", func(t *testing.T, ls []string) []string {
			ls[3], ls[7] = ls[7], ls[3]
			return ls
		}, nil, 4, 7, Reordered},
		{"two adjacent lines swapped", func(t *testing.T, ls []string) []string {
			ls[3], ls[4] = ls[4], ls[3]
			return ls
		}, nil, 4, 4, Reordered},
		{"a line repeated", func(t *testing.T, ls []string) []string {
			return append(ls[:5:5], ls[4:]...)
		}, nil, 6, 4, Inserted},
		{"a line added after the end", func(t *testing.T, ls []string) []string {
			return append(ls, ls[3])
		}, nil, 13, 10, Inserted},
		{"a line of another kind", func(t *testing.T, ls []string) []string {
			ls[3] = `{"type":"note","text":"hello"}`
			return ls
		}, nil, 4, 0, Malformed},
		{"an unknown field", func(t *testing.T, ls []string) []string {
			ls[3] = strings.Replace(ls[3], `{"type":"event",`, `{"type":"event","comment":"x",`, 1)
			return ls
		}, nil, 4, 0, Malformed},
		{"another version", func(t *testing.T, ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"version":1`, `"version":2`, 1)
			return ls
		}, nil, 1, 0, Malformed},
		{"the header changed", func(t *testing.T, ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"exportedAt":"`, `"exportedAt":"1`, 1)
			return ls
		}, nil, 1, 0, Malformed},
		{"the filter in the header changed", func(t *testing.T, ls []string) []string {
			ls[0] = strings.Replace(ls[0], `"filter":{}`, `"filter":{"tool":"x"}`, 1)
			return ls
		}, nil, 12, 10, Forged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, cp := exportLines(t)
			if rep := verifyExport(t, []byte(strings.Join(lines, "\n")+"\n"), testKey, cp); rep.Problem != nil {
				t.Fatalf("VerifyFile(untouched) = %v", rep)
			}
			key := testKey
			if tt.key != nil {
				key = tt.key
			}
			file := strings.Join(tt.edit(t, lines), "\n")
			if tt.wantKind != Malformed || tt.wantLine < 7 {
				file += "\n"
			}
			rep := verifyExport(t, []byte(file), key)
			if p := rep.Problem; p == nil || p.Line != tt.wantLine || p.Seq != tt.wantSeq || p.Kind != tt.wantKind {
				t.Errorf("VerifyFile() = %v; want a problem on line %d (seq %d): %s", rep, tt.wantLine, tt.wantSeq, tt.wantKind)
			}
			if s := rep.String(); !strings.HasPrefix(s, fmt.Sprintf("FAIL line %d ", tt.wantLine)) {
				t.Errorf("String() = %q, want it to name line %d", s, tt.wantLine)
			}
		})
	}
}

// TestVerifyFileCheckpoint: an export of a chain rebuilt after a checkpoint fails on the
// checkpoint's line, although every line and the end verify.
func TestVerifyFileCheckpoint(t *testing.T) {
	lines, cp := exportLines(t)
	other := cp
	other.Hash = bytes.Repeat([]byte{7}, 32)
	rep := verifyExport(t, []byte(strings.Join(lines, "\n")+"\n"), testKey, other)
	if p := rep.Problem; p == nil || p.Line != 11 || p.Seq != 10 || p.Kind != Rebuilt {
		t.Errorf("VerifyFile(another checkpoint) = %v, want line 11 (seq 10): rebuilt", rep)
	}
}

// TestVerifyFileKeyRotation: events under an old key verify with it; an event after the
// retirement under the retired key fails, also in an export that starts after the
// retirement (the header carries it).
func TestVerifyFileKeyRotation(t *testing.T) {
	ctx := context.Background()
	db := storetest.SQLite(t)
	oldKey, newKey := testKey, []byte("the new audit key, 32 bytes long!")
	old := newLog(t, db)
	appendN(t, old, 3)
	l, err := New(db, newKey, Options{Now: func() time.Time { return fixedTime.Add(time.Hour) }, OldKeys: [][]byte{oldKey}})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RetireKey(ctx, KeyID(oldKey), Event{Outcome: Allowed, Subject: "ops"}); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 2)
	rep, err := VerifyFile(bytes.NewReader(exportAll(t, l)), newKey, [][]byte{oldKey})
	if err != nil || rep.Problem != nil || rep.Count != 6 || len(rep.Keys) != 2 {
		t.Fatalf("VerifyFile(rotated) = %v, %v", rep, err)
	}
	// A replica still on the old key writes after the retirement.
	if err := old.Record(ctx, sampleEvent(50)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.SealCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range []TrailFilter{{}, {Since: fixedTime.Add(30 * time.Minute)}, {Subject: "user-50"}} {
		rep, err = VerifyFile(bytes.NewReader(export(t, l, f)), newKey, [][]byte{oldKey})
		if err != nil || rep.Problem == nil || rep.Problem.Seq != 7 || rep.Problem.Kind != RetiredKey {
			t.Errorf("VerifyFile(%+v, an event under the retired key) = %v, %v; want seq 7: retired_key", f, rep, err)
		}
	}
}

var update = flag.Bool("update", false, "rewrite testdata/export.jsonl")

// goldenExport is an export of four events with fixed nonces, on SQLite with the tests' fixed
// clock: the same bytes every time.
func goldenExport(t testing.TB) []byte {
	l := newLog(t, storetest.SQLite(t))
	ctx := context.Background()
	for i := range 4 {
		r, err := l.stampNonce(variedEvent(i), fixedTime, bytes.Repeat([]byte{byte(i + 1)}, nonceLen))
		if err != nil {
			t.Fatal(err)
		}
		if err := l.record(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.SealCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	return exportAll(t, l)
}

// TestExportGolden: the export's format does not change by accident (an auditor's tools read
// it; VerifyFile of an older cobranca checks it): testdata/export.jsonl is what Export writes.
func TestExportGolden(t *testing.T) {
	got := goldenExport(t)
	const path = "testdata/export.jsonl"
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("Export() differs from %s (-want +got); run with -update if the change is meant:\n%s", path, diff)
	}
	if rep := verifyExport(t, want, testKey); rep.Problem != nil || rep.Count != 4 {
		t.Errorf("VerifyFile(%s) = %v", path, rep)
	}
}

// FuzzVerifyFile: whatever the file, VerifyFile does not panic, and a file it accepts holds,
// before its end line, exactly the bytes of testdata/export.jsonl (an export: no database
// here, which fuzzing's instrumentation of the SQLite driver would slow to a crawl).
func FuzzVerifyFile(f *testing.F) {
	orig, err := os.ReadFile("testdata/export.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	body := orig[:bytes.LastIndexByte(orig[:len(orig)-1], '\n')+1]
	f.Add(orig)
	f.Add(orig[:len(orig)/2])
	f.Add(bytes.Replace(orig, []byte(`"seq":2`), []byte(`"seq":3`), 1))
	f.Add([]byte("{}\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, file []byte) {
		rep, err := VerifyFile(bytes.NewReader(file), testKey, nil)
		if err != nil {
			t.Fatalf("VerifyFile: %v", err) // a bytes.Reader never fails
		}
		if rep.Problem == nil && !bytes.HasPrefix(file, body) {
			t.Errorf("VerifyFile accepted a file whose lines differ from the export's:\n%s", file)
		}
	})
}

// BenchmarkExportVerify measures an export of 10 000 sealed events and its offline check,
// per event.
func BenchmarkExportVerify(b *testing.B) {
	const n = 10_000
	for _, f := range storetest.Fixtures(pg) {
		b.Run(string(f.Dialect), func(b *testing.B) {
			db := f.Migrated(b)
			l := newLog(b, db)
			ctx := context.Background()
			wctx, stop := context.WithCancel(ctx)
			done := make(chan struct{})
			go func() { l.RunWriter(wctx); close(done) }()
			for !l.writerUp.Load() {
				time.Sleep(time.Millisecond)
			}
			errs := make(chan error, 16)
			for w := range 16 {
				go func() {
					var err error
					for i := w; i < n && err == nil; i += 16 {
						err = l.Record(ctx, variedEvent(i))
					}
					errs <- err
				}()
			}
			for range 16 {
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
			}
			stop()
			<-done
			if _, err := l.SealCommitted(ctx); err != nil {
				b.Fatal(err)
			}
			file := exportAll(b, l)
			b.Run("export", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					exportAll(b, l)
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(len(file))/n, "bytes/event")
			})
			b.Run("verify", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if rep := verifyExport(b, file, testKey); rep.Problem != nil || rep.Count != n {
						b.Fatalf("VerifyFile = %v", rep)
					}
				}
				b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "events/s")
			})
		})
	}
}
