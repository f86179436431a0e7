//go:build unix

package sqlite

import (
	"context"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockFile takes an exclusive flock on PATH.lock, polling until ctx ends. goose has no SQLite
// locker, and a lock held inside the database would block the migration's own writes.
func (db *DB) lockFile(ctx context.Context) (func(), error) {
	if err := createPrivate(db.path + ".lock"); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(db.path+".lock", os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
