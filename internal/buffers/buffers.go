// Package buffers recycles the large byte buffers a tool call needs and drops
// with it.
package buffers

import "sync"

// A call on the fast path needs a few large byte buffers that die with it —
// the request body, the encoded result, the response, the arguments'
// canonical form for the audit digest — about 220 KB for 500 invoices. They
// are recycled rather than allocated (and zeroed, and collected) per call.
// Only buffers whose every use has ended go back: the fast path returns the
// body, result and response buffers after writing the response, the SDK path
// returns none of them, and the auditor takes and returns its canonical
// buffer within one digest, on either path.

// maxPooledBuffer is the largest buffer kept for reuse, so that one huge
// body does not pin its memory in the pool.
const maxPooledBuffer = 256 << 10

var buffers = sync.Pool{New: func() any { return new([]byte) }}

// Get returns an empty buffer with room for at least n bytes.
func Get(n int) *[]byte {
	p := buffers.Get().(*[]byte)
	if cap(*p) < n {
		*p = make([]byte, 0, n)
	}
	*p = (*p)[:0]
	return p
}

// Put recycles p, holding b, which may be *p grown by appends.
func Put(p *[]byte, b []byte) {
	if cap(b) > maxPooledBuffer {
		return
	}
	*p = b[:0]
	buffers.Put(p)
}
