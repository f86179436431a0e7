// Package safefile opens the server's own private files (the audit spool, key files) so that
// a symbolic link or a file planted by another user in the data directory is refused rather
// than followed, truncated or trusted.
package safefile

import (
	"errors"
	"fmt"
	"os"
)

// ErrUnsafe wraps every refusal of Open.
var ErrUnsafe = errors.New("unsafe file")

// Open opens path with flag (os.O_NOFOLLOW added where the system has it), creating it with
// perm when flag says so, and refuses, before anything is read or written, a path that is a
// symbolic link, is not a regular file, or is owned by another user than the process's
// effective one. The error names the path and what is wrong. O_TRUNC is refused: it would cut
// the file before it is checked (remove it and create it with O_EXCL instead).
func Open(path string, flag int, perm os.FileMode) (*os.File, error) {
	if flag&os.O_TRUNC != 0 {
		return nil, fmt.Errorf("%s: safefile.Open does not take O_TRUNC", path)
	}
	f, err := os.OpenFile(path, flag|oNoFollow, perm)
	if err != nil {
		if isSymlinkError(path, err) {
			return nil, fmt.Errorf("%s: %w: it is a symbolic link", path, ErrUnsafe)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: not a regular file (%s)", path, ErrUnsafe, st.Mode().Type())
	}
	if uid, ok := owner(st); ok && uid != os.Geteuid() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: owned by uid %d, not by this server's user (uid %d)", path, ErrUnsafe, uid, os.Geteuid())
	}
	return f, nil
}

// CheckNotWritableByOthers refuses a file that its group or other users may write: anyone who
// can write a key file can replace the key.
func CheckNotWritableByOthers(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s: %w: writable by its group or by other users (mode %04o); make it 0600", f.Name(), ErrUnsafe, st.Mode().Perm())
	}
	return nil
}

func isSymlinkError(path string, err error) bool {
	st, lerr := os.Lstat(path)
	return lerr == nil && st.Mode()&os.ModeSymlink != 0 && err != nil
}
