package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name  string
		bi    debug.BuildInfo
		short string
		full  string
	}{
		{"dirty commit", debug.BuildInfo{GoVersion: "go1.23.4", Main: debug.Module{Path: "m", Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}}},
			"(devel) 0123456789ab+dirty", "m (devel) 0123456789ab+dirty (2026-01-02T03:04:05Z) go1.23.4"},
		{"clean tagged", debug.BuildInfo{Main: debug.Module{Path: "m", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}},
			"v1.2.3 0123456789ab", "m v1.2.3 0123456789ab"},
		{"pseudo-version naming the commit", debug.BuildInfo{Main: debug.Module{Path: "m", Version: "v0.0.0-20261125122838-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"}}},
			"v0.0.0-20261125122838-0123456789ab+dirty", "m v0.0.0-20261125122838-0123456789ab+dirty"},
		{"no vcs (go test)", debug.BuildInfo{Main: debug.Module{Path: "m"}}, "(devel)", "m (devel)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := fromBuildInfo(&tt.bi)
			if got := in.Short(); got != tt.short {
				t.Errorf("Short() = %q, want %q", got, tt.short)
			}
			if got := in.String(); got != tt.full {
				t.Errorf("String() = %q, want %q", got, tt.full)
			}
		})
	}
}

// TestGet: a test binary has build information (the module path at least).
func TestGet(t *testing.T) {
	if in := Get(); in.Version == "" || in.Go == "" {
		t.Errorf("Get() = %+v: empty version or Go version", in)
	}
}
