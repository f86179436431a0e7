package portfolio

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cobranca/cobranca/internal/canonical"
)

// TestAppendCanonicalJSONUnchanged: for reference-shaped input the audit's
// argument digest is byte for byte what it was before issue 15: this is
// the SHA-256 of the old AppendCanonicalJSON's output (commit e10213c) for
// the benchmark portfolio and 300 random ones.
func TestAppendCanonicalJSONUnchanged(t *testing.T) {
	const before = "555e8c404a770e99b067246d608d5f858d6948b6474fd09b439490d7a6d0f03b"
	in, _ := benchInput(t)
	h := sha256.New()
	h.Write(in.AppendCanonicalJSON(nil))
	r := rand.New(rand.NewPCG(2025, 6))
	for range 300 {
		h.Write(randomInput(r).AppendCanonicalJSON(nil))
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != before {
		t.Errorf("AppendCanonicalJSON of reference-shaped input changed: digest %s, was %s", got, before)
	}
}

// TestAppendCanonicalJSONExtended: with issue 15's fields, AppendCanonicalJSON
// is the canonical package's form of the input as encoding/json writes it.
func TestAppendCanonicalJSONExtended(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 6))
	for i := range 400 {
		in := genExtended(1+r.IntN(40), uint64(4_000_000+i), time.Date(2030, 1, 1+r.IntN(300), 0, 0, 0, 0, time.UTC))
		if i%5 == 0 {
			in.Rates[0].Rate = Decimal{Coef: r.Uint64(), Scale: uint8(r.IntN(30))} // any Decimal, valid or not
		}
		doc, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := canonical.Transform(doc)
		if err != nil {
			t.Fatalf("canonical.Transform(%s): %v", doc, err)
		}
		if got := in.AppendCanonicalJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendCanonicalJSON =\n%s\ncanonical.Transform =\n%s", got, want)
		}
	}
}
