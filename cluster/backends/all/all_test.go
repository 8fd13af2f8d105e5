package all_test

import (
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all"
	"github.com/locklab/locklab/testenv"
)

// TestMakefileInstalls: `make deps` installs the Debian packages of every
// row of the backend table whose server is missing (`bench deps
// --missing`), so a fresh machine runs them; after it every row's server
// is here (in CI, where `make test` ran `make test-deps` first).
func TestMakefileInstalls(t *testing.T) {
	b, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "bench deps --missing") {
		t.Error("the Makefile's apt-install does not install what `bench deps --missing` prints")
	}
	rows := cluster.Backends()
	if len(rows) < 7 || rows[0].Name != cluster.BackendRedis {
		t.Fatalf("backend table: %d rows, first %q; want Redis's first and the six others", len(rows), rows[0].Name)
	}
	for _, be := range rows {
		if len(be.Packages) == 0 {
			t.Errorf("backend %s: no Debian packages: `make deps` cannot install it", be.Name)
		}
		if len(be.Installed)+len(be.Binaries)+len(be.Files) == 0 {
			t.Errorf("backend %s: nothing shows its server installed (Installed, Binaries, Files)", be.Name)
		}
		if m := be.Missing(); len(m) > 0 && testenv.InCI() {
			t.Errorf("backend %s: %v not found after `make test-deps` installed %v", be.Name, m, be.Packages)
		}
	}
}

// A row's Missing lists what matches no file: a glob of Installed, or a
// binary not on PATH and a file that is not there.
func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		row  cluster.TableBackend
		want int
	}{
		{cluster.TableBackend{Installed: []string{"/bin/s[h]"}}, 0},
		{cluster.TableBackend{Installed: []string{"/bin/sh", "/nonexistent/locklab-*"}}, 1},
		{cluster.TableBackend{Binaries: []string{"sh", "locklab-no-such-binary"}, Files: []string{"/nonexistent"}}, 2},
		{cluster.TableBackend{Binaries: []string{"sh"}, Installed: []string{"/nonexistent"}}, 1}, // Installed wins
	} {
		if got := tc.row.Missing(); len(got) != tc.want {
			t.Errorf("%+v: Missing() = %v, want %d paths", tc.row, got, tc.want)
		}
	}
}
