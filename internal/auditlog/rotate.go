package auditlog

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// KeyRetiredEvent records that an audit key is retired: written under the current key by
// `cobranca audit rotate-key`, its Tool field names the retired key ("key:<key id>"). From it
// on, Verify reports every event under that key (RetiredKey).
const KeyRetiredEvent = "audit.key.retired"

// keyObject prefixes a key id in a KeyRetiredEvent's Tool field.
const keyObject = "key:"

// OldKey is what the store holds of one of the Log's old keys (Options.OldKeys).
type OldKey struct {
	ID string
	// Events counts the events that name the key; Last is the server time of the newest.
	Events int64
	Last   time.Time
	// Retired says whether a KeyRetiredEvent names the key already.
	Retired bool
}

// OldKeys says, for each old key of the Log, how much it was used and whether it is retired.
func (l *Log) OldKeys(ctx context.Context) ([]OldKey, error) {
	var out []OldKey
	for _, id := range slices.Sorted(maps.Keys(l.verifyKeys)) {
		if id == l.keyID {
			continue
		}
		k := OldKey{ID: id}
		var lastUS int64
		err := l.db.QueryRow(ctx, `SELECT count(*), coalesce(max(server_time), 0) FROM audit_event WHERE key_id = $1`, id).Scan(&k.Events, &lastUS)
		if err != nil {
			return nil, fmt.Errorf("audit keys: %w", err)
		}
		if lastUS != 0 {
			k.Last = time.UnixMicro(lastUS).UTC()
		}
		err = l.db.QueryRow(ctx, `SELECT count(*) > 0 FROM audit_event WHERE event = $1 AND tool = $2`, KeyRetiredEvent, keyObject+id).Scan(&k.Retired)
		if err != nil {
			return nil, fmt.Errorf("audit keys: %w", err)
		}
		out = append(out, k)
	}
	return out, nil
}

// RetireKey records that the old key id is retired, in an event made from ev (who retired it)
// and sealed under the current key.
func (l *Log) RetireKey(ctx context.Context, id string, ev Event) error {
	if _, ok := l.verifyKeys[id]; !ok || id == l.keyID {
		return errors.New("audit keys: only an old key of COBRANCA_AUDIT_KEY (after the first) can be retired")
	}
	ev.Name, ev.Tool = KeyRetiredEvent, keyObject+id
	return l.Record(ctx, ev)
}

// SealingKeyID is the id of the key this Log seals under ("" without one).
func (l *Log) SealingKeyID() string { return l.keyID }
