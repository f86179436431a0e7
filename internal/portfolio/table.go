package portfolio

import (
	"math/bits"
	"math/rand/v2"
	"sync"
)

// stringIndex numbers distinct strings 0, 1, 2... in order of first
// appearance, as a map[string]int32 would, at a fraction of the cost for
// Analyze and Validate: an open-addressing hash table with linear probing,
// sized once from the number of strings so that it is never more than half
// full and never grows, whose entries hold no pointers. A string of up to
// 16 bytes is held whole in its entry's two words, so it is compared
// without reading it again; a longer one is compared through the caller,
// who knows where it lives.
//
// Each index hashes with its own random keys, so input cannot plan
// collisions; they would only cost comparisons, never change a result.
type stringIndex struct {
	k0, k1  uint64  // hash keys
	mask    uint64  // len(slots)-1
	slots   []int32 // 0 when empty, or else 1 + the number of a string
	entries []entry // by number
}

// entry is what the index keeps of a string: its length and two words
// (see number).
type entry struct {
	w0, w1 uint64
	n      int
}

// scratch is memory that Validate and Analyze need only while they run:
// a stringIndex's slots and entries, Analyze's customers and its queue's
// buffer. None of it holds a pointer, so a pooled scratch keeps no input
// alive; reusing it spares the garbage collector a dozen kilobytes or more
// per 500-invoice call, which costs more than the work done in them.
type scratch struct {
	slots   []int32
	entries []entry
	custs   []customer
	buf     []int32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// getScratch takes a scratch from the pool; give it back with free once
// nothing made from it is in use.
func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func (m *scratch) free() { scratchPool.Put(m) }

// invoicePool holds invoice arrays given back by Input.Release, zeroed, for
// the next Parse: a 500-invoice call's array is some 50 KB of pointers the
// garbage collector would otherwise allocate, scan and free every call.
var invoicePool sync.Pool // of *[]Invoice, length 0

// invoiceArray returns an empty invoice slice of capacity at least n whose
// spare capacity is zeroed: from the pool when it holds one large enough.
func invoiceArray(n int) []Invoice {
	if p, _ := invoicePool.Get().(*[]Invoice); p != nil && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]Invoice, 0, n)
}

// Release gives in's invoice array back to Parse's pool and empties
// in.Invoices. Call it once nothing made from in is in use — Analyze's
// result keeps none of the array: its strings live elsewhere — and never
// use in, or a copy of its Invoices, again. An Input not from Parse may be
// released too; releasing is never required.
func (in *Input) Release() {
	xs := in.Invoices
	in.Invoices = nil
	if cap(xs) == 0 || cap(xs) > MaxInvoices {
		return // nothing, or more than Parse ever asks for
	}
	// All of it, not only up to len: an Input shortened, or not from Parse,
	// may hold invoices past len, and Parse takes the room as zeroed. No
	// pointer into this call's strings or details outlives it.
	xs = xs[:cap(xs)]
	clear(xs)
	xs = xs[:0]
	invoicePool.Put(&xs)
}

// index makes a stringIndex for at most n distinct strings in m, and
// returns extra int32s of zeroed memory besides.
func (m *scratch) index(n, extra int) (stringIndex, []int32) {
	size := 8
	for size < 2*n {
		size <<= 1
	}
	slots := grow(&m.slots, size+extra)
	clear(slots)
	// Room for n entries, so that number never reallocates them.
	if cap(m.entries) < n {
		m.entries = make([]entry, 0, n)
	}
	return stringIndex{
		k0: rand.Uint64(), k1: rand.Uint64(), mask: uint64(size - 1),
		slots: slots[:size:size], entries: m.entries[:0],
	}, slots[size:]
}

// grow returns (*s)[:n], reallocating *s when its capacity is short. The
// elements are not cleared.
func grow[T any](s *[]T, n int) []T {
	if cap(*s) < n {
		*s = make([]T, n)
	}
	*s = (*s)[:n]
	return *s
}

// number returns the number of s, giving it the next one if s is new, and
// whether it is new. For strings longer than 16 bytes it calls str to get
// the string of a number already given.
func (x *stringIndex) number(s string, str func(k int32) string) (k int32, added bool) {
	return x.lookup(s, str, true)
}

// find returns the number of s, or -1 if it has none; it never adds s.
func (x *stringIndex) find(s string, str func(k int32) string) int32 {
	k, added := x.lookup(s, str, false)
	if added {
		return -1
	}
	return k
}

// lookup is number, or find when add is false: then it reports a string
// it would add as added, without adding it.
func (x *stringIndex) lookup(s string, str func(k int32) string, add bool) (k int32, added bool) {
	// Two words that, with the length, hold every byte of a string of up
	// to 16 bytes: its first and last eight bytes, which overlap under 16,
	// or four and four under 8, or three bytes under 4. Of a longer string
	// they are only its ends, and the hash reads all of it.
	var w0, w1 uint64
	h := x.k0 ^ uint64(len(s))
	switch n := len(s); {
	case n > 16:
		for i := 0; i < n-8; i += 8 {
			h = mix(h^load64(s[i:]), x.k1)
		}
		w0, w1 = load64(s), load64(s[n-8:])
	case n >= 8:
		w0, w1 = load64(s), load64(s[n-8:])
	case n >= 4:
		w0, w1 = uint64(load32(s)), uint64(load32(s[n-4:]))
	case n > 0:
		w0 = uint64(s[0]) | uint64(s[n/2])<<8 | uint64(s[n-1])<<16
	}
	if len(s) <= 16 {
		h ^= w0
	}
	h = mix(h, w1^x.k1)

	for p := h & x.mask; ; p = (p + 1) & x.mask {
		e := x.slots[p]
		if e == 0 {
			if !add {
				return 0, true
			}
			k = int32(len(x.entries))
			x.entries = append(x.entries, entry{w0: w0, w1: w1, n: len(s)})
			x.slots[p] = k + 1
			return k, true
		}
		if en := &x.entries[e-1]; en.w0 == w0 && en.w1 == w1 && en.n == len(s) && (len(s) <= 16 || str(e-1) == s) {
			return e - 1, false
		}
	}
}

// mix is the multiply-and-fold of wyhash.
func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}
