//go:build unix

package safefile

import (
	"io/fs"
	"syscall"
)

const oNoFollow = syscall.O_NOFOLLOW

func owner(st fs.FileInfo) (int, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(s.Uid), true
}
