package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// version and revision are what the build says this binary is: the Dockerfile sets them from
// its VERSION and REVISION build arguments with -ldflags "-X main.version=… -X
// main.revision=…". Link-time constants in effect, never written at run time. Unset (a plain
// go build), buildInfo falls back to what the Go toolchain recorded.
var (
	version  string
	revision string
)

// build describes this binary.
type build struct {
	Version, Revision, Go string
}

// buildInfo is this binary's version and revision: the linker's, else the module version
// and the VCS revision the Go toolchain stamped (with "-dirty" for a modified tree), else
// "(devel)" and "unknown". Read once: the server's start asks for it twice (traces, metrics).
var buildInfo = sync.OnceValue(func() build {
	b := build{Version: version, Revision: revision, Go: runtime.Version()}
	if info, ok := debug.ReadBuildInfo(); ok {
		if b.Version == "" {
			b.Version = info.Main.Version
		}
		if b.Revision == "" {
			var rev, dirty string
			for _, s := range info.Settings {
				switch {
				case s.Key == "vcs.revision":
					rev = s.Value
				case s.Key == "vcs.modified" && s.Value == "true":
					dirty = "-dirty"
				}
			}
			if rev != "" {
				b.Revision = rev + dirty
			}
		}
	}
	if b.Version == "" {
		b.Version = "(devel)"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
})

func (b build) String() string {
	return fmt.Sprintf("cobranca %s (revision %s, %s)", b.Version, b.Revision, b.Go)
}

func printVersion(_ context.Context, e env, fs *flagSet, args []string) error {
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.misuse("unexpected argument %q", fs.Arg(0))
	}
	_, err := fmt.Fprintln(e.stdout, buildInfo())
	return err
}
