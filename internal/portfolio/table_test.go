package portfolio

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// numberAll numbers strs with a stringIndex and with a map, and fails on
// the first disagreement. It returns how many times the index called back
// for a string.
func numberAll(t *testing.T, x *stringIndex, strs []string) int {
	t.Helper()
	want := map[string]int32{}
	var distinct []string
	calls := 0
	str := func(k int32) string { calls++; return distinct[k] }
	for _, s := range strs {
		wk, seen := want[s]
		if !seen {
			wk = int32(len(want))
			want[s] = wk
		}
		k, added := x.number(s, str)
		if k != wk || added == seen {
			t.Fatalf("number(%q) = %d, %v; want %d, %v", s, k, added, wk, !seen)
		}
		if added {
			distinct = append(distinct, s)
		}
	}
	return calls
}

func TestStringIndexNumbersLikeAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		// Few letters and many lengths around the 4, 8 and 16 of the
		// entries, so that strings share words, prefixes and suffixes.
		var pool []string
		for range 1 + r.IntN(60) {
			b := make([]byte, r.IntN(41))
			for i := range b {
				b[i] = "ab\x00\xff"[r.IntN(4)]
			}
			pool = append(pool, string(b))
		}
		strs := make([]string, 1+r.IntN(200))
		for i := range strs {
			strs[i] = pool[r.IntN(len(pool))]
		}
		x, _ := new(scratch).index(len(strs), 0)
		numberAll(t, &x, strs)
	}
}

// With the second hash key equal to the last word they share, strings
// hash to 0: all of them land in one chain of probes, and only the
// comparison of their entries, or of the strings themselves, tells them
// apart.
func TestStringIndexCollisions(t *testing.T) {
	const tail = "-cust-01"
	tests := []struct {
		name      string
		k1        uint64
		strs      []string
		callbacks bool // some strings can only be told apart by the callback
	}{
		{"same last eight bytes", load64(tail), []string{
			tail,                // 8 bytes
			"x" + tail,          // 9
			"y" + tail,          // 9, first word differs
			"xy" + tail,         // 10
			"01234567" + tail,   // 16
			"0123456X" + tail,   // 16, differs inside the first word
			"0123456789" + tail, // 18: compared through the callback
			"0123X56789" + tail, // 18, same ends, differs in the middle
			"01234567890" + tail,
			strings.Repeat("é", 20) + tail,
		}, true},
		{"same words, lengths 8 to 16", load64("AAAAAAAA"), []string{
			"AAAAAAAA", "AAAAAAAAA", "AAAAAAAAAA", "AAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAA",
		}, false},
		{"under four bytes", 0, []string{"", "a", "aa", "aaa", "ab", "abb", "ba", "b", "bab"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all []string
			for range 3 {
				all = append(all, tt.strs...)
			}
			x, _ := new(scratch).index(len(all), 0)
			x.k1 = tt.k1
			if calls := numberAll(t, &x, all); tt.callbacks && calls == 0 {
				t.Errorf("number never compared long strings through its callback")
			}
			// The premise: every string landed in the same slot chain.
			used := 0
			for _, e := range x.slots {
				if e != 0 {
					used++
				}
			}
			for p := range len(tt.strs) {
				if x.slots[p] == 0 {
					t.Fatalf("slots %d of %d empty: the test no longer forces collisions (%d used)", p, len(tt.strs), used)
				}
			}
		})
	}
}

// A full index (half its slots) still finds every string, also in a
// scratch that earlier, larger and smaller, indexes used (as the pool
// hands them out): nothing of theirs shows through.
func TestStringIndexFull(t *testing.T) {
	m := new(scratch)
	for _, n := range []int{0, 1, 3, 4, 5, 8, 100, MaxInvoices, 7, 300, 2} {
		strs := make([]string, n)
		for i := range strs {
			strs[i] = "inv-" + strings.Repeat("0", i%20) + string(rune('a'+i%26)) + string(rune('A'+i/26%26))
		}
		x, extra := m.index(n, n)
		for i := range extra {
			if extra[i] != 0 {
				t.Fatalf("index(%d, %d): extra[%d] = %d, want zeroed memory", n, n, i, extra[i])
			}
			extra[i] = -1 // dirty it for the next round
		}
		numberAll(t, &x, append(strs, strs...))
		if len(x.slots) < 2*n {
			t.Errorf("index(%d) has %d slots, want at least %d", n, len(x.slots), 2*n)
		}
	}
}
