//go:build unix

package auditlog

import (
	"errors"
	"os"
	"syscall"
)

// lockSpool takes an exclusive flock on f, without waiting: two processes sharing one data
// directory would interleave their spools.
func lockSpool(f *os.File) (func(), error) {
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errors.New("in use by another process: give each replica its own COBRANCA_DATA_DIR")
		}
		return nil, err
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }, nil
}
