package auth

import (
	"context"
	"crypto"
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// verifiedCache remembers tokens whose signature and static claims (iss,
// aud, typ, alg, subject, act) already checked out, so that an agent calling
// many times with one token pays for one signature check, not one per call.
// What can change with time is checked again on every hit: the token must
// still be within exp (plus leeway), and the key that signed it must still be
// the one the key source returns for its kid — a rotated or withdrawn key
// ends every entry it signed. Entries are keyed by the token's SHA-256, never
// by the token itself, and the cache is bounded.
type verifiedCache struct {
	max int

	mu      sync.Mutex
	entries map[[sha256.Size]byte]*verifiedEntry
}

type verifiedEntry struct {
	principal *Principal
	kid       string
	key       crypto.PublicKey
	expiry    time.Time
}

func newVerifiedCache(max int) *verifiedCache {
	return &verifiedCache{max: max, entries: make(map[[sha256.Size]byte]*verifiedEntry)}
}

// get returns the cached principal for token if the entry is still valid
// at now.
func (c *verifiedCache) get(ctx context.Context, token string, now time.Time, leeway time.Duration, keys keySource) (*Principal, bool) {
	sum := sha256.Sum256([]byte(token))
	c.mu.Lock()
	e, ok := c.entries[sum]
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	if !now.Before(e.expiry.Add(leeway)) {
		c.drop(sum)
		return nil, false
	}
	key, err := keys.publicKey(ctx, e.kid)
	if err != nil || !sameKey(key, e.key) {
		c.drop(sum)
		return nil, false
	}
	p := *e.principal
	p.Scopes = slices.Clone(p.Scopes)
	return &p, true
}

func (c *verifiedCache) put(token string, p *Principal, kid string, key crypto.PublicKey) {
	sum := sha256.Sum256([]byte(token))
	cp := *p
	cp.Scopes = slices.Clone(cp.Scopes)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		// Drop about half, in map order (effectively random): cheap, and a
		// dropped token only costs one more signature check.
		n := 0
		for k := range c.entries {
			delete(c.entries, k)
			if n++; n >= c.max/2 {
				break
			}
		}
	}
	c.entries[sum] = &verifiedEntry{principal: &cp, kid: kid, key: key, expiry: p.Expiry}
}

func (c *verifiedCache) drop(sum [sha256.Size]byte) {
	c.mu.Lock()
	delete(c.entries, sum)
	c.mu.Unlock()
}

func sameKey(a, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}
