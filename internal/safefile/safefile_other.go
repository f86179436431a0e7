//go:build !unix

package safefile

import "io/fs"

const oNoFollow = 0

// owner is unknown where files have no Unix owner.
func owner(fs.FileInfo) (int, bool) { return 0, false }
