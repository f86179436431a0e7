package mcpapi

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cobranca/cobranca/internal/auditlog"
	"github.com/cobranca/cobranca/internal/canonical"
	"github.com/cobranca/cobranca/internal/collections"
	"github.com/cobranca/cobranca/internal/pipeline"
	"github.com/cobranca/cobranca/internal/portfolio"
	"github.com/cobranca/cobranca/internal/store/storetest"
	"github.com/cobranca/cobranca/internal/value"
)

// jcsOf is the reference for portfolio's AppendCanonicalJSON: the canonical
// package's form of the input as encoding/json writes it.
func jcsOf(t testing.TB, in *portfolio.Input) string {
	t.Helper()
	doc, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	c, err := canonical.Transform(doc)
	if err != nil {
		t.Fatalf("canonical.Transform(%s): %v", doc, err)
	}
	return string(c)
}

// canonicalPieces are the characters whose RFC 8785 form differs from
// encoding/json's or needs an escape: every ASCII byte (controls with and
// without a short escape, '"', '\\', '/', DEL, and < > & that Marshal
// escapes), U+2028 and U+2029 (escaped by Marshal, not by RFC 8785), other
// non-ASCII around them, U+FFFD, and invalid UTF-8 (which Marshal writes as
// \ufffd and RFC 8785 as U+FFFD itself).
func canonicalPieces() []string {
	var p []string
	for c := range 0x80 {
		p = append(p, string(rune(c)))
	}
	return append(p, "\u0080", "\u00a0", "é", "ção", "日本", "\u2027", "\u2028", "\u2029", "\u202a", "\ufeff", "\ufffd", "😀",
		"\U000e0041", "\xff", "\xe2\x80", "\xed\xa0\x80", "\xc0\xaf", "\b\f\n\r\t", "\u2028\u2029<>&\"\\/")
}

// TestAppendCanonicalJSONIsJCS: portfolio's fast canonical encoding is byte
// for byte the canonical package's, for any Input, validated or not, each
// odd character at every offset within and around an eight-byte word.
func TestAppendCanonicalJSONIsJCS(t *testing.T) {
	var odd []string
	for _, p := range canonicalPieces() {
		for before := range 18 {
			odd = append(odd, strings.Repeat("a", before)+p+strings.Repeat("b", 17-before))
		}
	}
	odd = append(odd, strings.Repeat("é", value.MaxTextLen), strings.Repeat("x", value.MaxTextLen)+"\u2028")
	amounts := []int64{0, 1, -1, 100, value.MaxAmountCents, 1<<53 - 1, 1 << 53, 1<<53 + 1, 1<<53 + 3, -(1 << 53), -(1 << 53) - 1,
		1e18 + 1, math.MaxInt64, math.MinInt64, 1<<62 + 12345}
	r := rand.New(rand.NewPCG(20, 26))
	pick := func() string {
		if r.IntN(3) == 0 {
			return odd[r.IntN(len(odd))]
		}
		return []string{"2025-06-30", "open", "paid", "void", "Open", "inv-00001", "Fábio 3 Ltda"}[r.IntN(7)]
	}
	inputs := []*portfolio.Input{{AsOf: "2025-06-30", Invoices: []portfolio.Invoice{}}}
	for i, s := range odd { // every odd string in every field
		in := &portfolio.Input{AsOf: s, Invoices: []portfolio.Invoice{{ID: s, CustomerID: s, CustomerName: s, DueDate: s,
			AmountCents: amounts[i%len(amounts)], Status: portfolio.Status(s), DoNotContact: i%2 == 0}}}
		inputs = append(inputs, in)
	}
	for range 3000 {
		in := &portfolio.Input{AsOf: pick(), Invoices: []portfolio.Invoice{}}
		for range r.IntN(4) {
			amt := r.Int64() - r.Int64()
			if r.IntN(2) == 0 {
				amt = amounts[r.IntN(len(amounts))]
			}
			in.Invoices = append(in.Invoices, portfolio.Invoice{ID: pick(), CustomerID: pick(), CustomerName: pick(), DueDate: pick(),
				AmountCents: amt, Status: portfolio.Status(pick()), DoNotContact: r.IntN(2) == 0})
		}
		inputs = append(inputs, in)
	}
	for _, in := range inputs {
		if got, want := in.AppendCanonicalJSON([]byte("prefix")), "prefix"+jcsOf(t, in); string(got) != want {
			t.Fatalf("AppendCanonicalJSON(%+v) =\n%s\ncanonical.Transform =\n%s", in, got, want)
		}
	}
}

func FuzzAppendCanonicalJSON(f *testing.F) {
	f.Add("2025-06-30", "inv-1", "cust-1", "Ana <1> & \"Filhos\"", "2025-06-01", "open", int64(100), false)
	f.Add("2025-02-30\u2028", "\xff", "\x00", "é\u2029", "2025-06-01\n", "Paid", int64(1<<53+1), true)
	f.Fuzz(func(t *testing.T, asOf, id, cust, name, due, status string, cents int64, dnc bool) {
		in := &portfolio.Input{AsOf: asOf, Invoices: []portfolio.Invoice{
			{ID: id, CustomerID: cust, CustomerName: name, DueDate: due, AmountCents: cents, Status: portfolio.Status(status), DoNotContact: dnc},
			{ID: name, CustomerID: id, CustomerName: due, DueDate: asOf, AmountCents: -cents, Status: portfolio.StatusVoid, DoNotContact: !dnc},
		}}
		if got, want := in.AppendCanonicalJSON(nil), jcsOf(t, in); string(got) != want {
			t.Fatalf("AppendCanonicalJSON(%+v) =\n%s\ncanonical.Transform =\n%s", in, got, want)
		}
	})
}

// TestAuditArgsDigestOnePath: the audit event of an analyze call carries the
// same argument digest whether the tool's canonical encoding of its decoded
// arguments made it (AppendCanonicalArgs) or the canonical package made it of
// the raw arguments (a call without it), and whichever way the client spelled
// the arguments: one canonical form.
func TestAuditArgsDigestOnePath(t *testing.T) {
	ctx := context.Background()
	key := []byte(strings.Repeat("k", 32))
	digest, errD := auditlog.NewDigester(key)
	alog, errL := auditlog.New(storetest.SQLite(t), key, auditlog.Options{})
	if err := errors.Join(errD, errL); err != nil {
		t.Fatal(err)
	}
	aud := pipeline.NewAuditor(alog, digest)
	tools, err := collections.Tools(collections.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	c := tools[0].Contract
	spellings := []string{
		`{"asOf":"2026-02-01","invoices":[{"id":"a<b>&c/d","customerId":"c\"1\\","customerName":"José 😀 Ltda","dueDate":"2026-01-01","amountCents":100,"status":"open","doNotContact":true}]}`,
		`{"invoices":[{"status":"open","id":"a\u003cb\u003e\u0026c\/d","customerId":"c\u00221\u005c","customerName":"Jos\u00e9 \ud83d\ude00 Ltda","dueDate":"2026-01-01","amountCents":100.0,"doNotContact":true}],"asOf":"2026-02-01"}`,
		" {\n\t\"asOf\" : \"2026-02-01\" ,\r\n \"invoices\" : [ { \"amountCents\" : 1e2 , \"id\" : \"a<b>&c/d\", \"customerId\":\"c\\\"1\\\\\", \"customerName\":\"Jos\\u00E9 \\uD83D\\uDE00 Ltda\", \"dueDate\":\"2026-01-01\", \"status\":\"open\", \"doNotContact\":true } ] } ",
		`{"asOf":"2026-02-01","invoices":[{"id":"a<b>&c/d","customerId":"c\"1\\","customerName":"José 😀 Ltda","dueDate":"2026-01-01","amountCents":10000E-2,"status":"open","doNotContact":true}]}`,
	}
	for _, raw := range spellings {
		eff, err := analyzeLogic(ctx, json.RawMessage(raw))
		if err != nil {
			t.Fatalf("analyze(%s): %v", raw, err)
		}
		for _, rec := range []pipeline.CallRecord{
			{Contract: c, Outcome: auditlog.Allowed, Args: json.RawMessage(raw), AppendCanonicalArgs: eff.AppendCanonicalArgs},
			{Contract: c, Outcome: auditlog.Allowed, Args: json.RawMessage(raw)},
		} {
			if err := aud.RecordCall(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := alog.SealCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := alog.Events(ctx, 0, 100)
	if err != nil || len(evs) != 2*len(spellings) {
		t.Fatalf("Events = %d events, %v; want %d", len(evs), err, 2*len(spellings))
	}
	for i, ev := range evs {
		path := [2]string{"AppendCanonicalArgs", "canonical package"}[i%2]
		if ev.ArgsDigest == "" || ev.ArgsDigest != evs[0].ArgsDigest {
			t.Errorf("spelling %d by the %s: args digest %s, want %s (spelling 0, AppendCanonicalArgs)\n%s", i/2, path, ev.ArgsDigest, evs[0].ArgsDigest, spellings[i/2])
		}
	}
	// The check can fail: other arguments digest otherwise.
	other, err := digest.JSON([]byte(strings.Replace(spellings[0], `"amountCents":100`, `"amountCents":101`, 1)))
	if err != nil || other == evs[0].ArgsDigest {
		t.Errorf("digest of other arguments = %s, %v; want another digest than %s", other, err, evs[0].ArgsDigest)
	}
}
