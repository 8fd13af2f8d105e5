// Package version tells which build of locklab is running: the module
// version and the VCS commit (with +dirty when the tree had uncommitted
// changes) that the Go toolchain stamps into every binary built inside the
// repository. It is a leaf: it imports nothing of locklab, so the commands
// and runner (which writes it into result.json) can both use it.
package version

import (
	"runtime/debug"
	"strings"
)

// Info is what the Go toolchain recorded about this build.
type Info struct {
	Module  string // module path, e.g. github.com/locklab/locklab
	Version string // module version, "(devel)" for a build in the repository
	Commit  string // VCS revision, empty when the build had none (go test, -buildvcs=false)
	Dirty   bool   // the tree had uncommitted changes
	Time    string // commit time, RFC 3339
	Go      string // Go toolchain version
}

// Get reads the build information of the running binary.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "unknown"}
	}
	return fromBuildInfo(bi)
}

func fromBuildInfo(bi *debug.BuildInfo) Info {
	in := Info{Module: bi.Main.Path, Version: bi.Main.Version, Go: bi.GoVersion}
	if in.Version == "" {
		in.Version = "(devel)"
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Commit = s.Value
		case "vcs.modified":
			in.Dirty = s.Value == "true"
		case "vcs.time":
			in.Time = s.Value
		}
	}
	return in
}

// Short is the version and the commit's first 12 characters, with +dirty:
// "(devel) 1a2b3c4d5e6f+dirty"; the version alone when it already names
// the commit (Go 1.24's pseudo-versions "v0.0.0-20261125122838-1a2b3c4d5e6f+dirty")
// or there is none. runner writes it into result.json's version.
func (in Info) Short() string {
	s := in.Version
	c := in.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if c != "" && !strings.Contains(s, c) {
		s += " " + c
		if in.Dirty {
			s += "+dirty"
		}
	}
	return s
}

// String is the line --version prints: the module, Short, the commit time
// and the Go version.
func (in Info) String() string {
	var b strings.Builder
	if in.Module != "" {
		b.WriteString(in.Module + " ")
	}
	b.WriteString(in.Short())
	if in.Time != "" {
		b.WriteString(" (" + in.Time + ")")
	}
	if in.Go != "" {
		b.WriteString(" " + in.Go)
	}
	return b.String()
}

// Short is Get().Short().
func Short() string { return Get().Short() }
