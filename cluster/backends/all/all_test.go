package all_test

import (
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all"
)

// TestMakefileInstalls: `make deps` installs every table backend's Debian
// packages when missing, so a fresh machine runs them.
func TestMakefileInstalls(t *testing.T) {
	b, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	var deb string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "DEB_PKGS :=") {
			deb = line
		}
	}
	if len(cluster.Backends()) < 2 {
		t.Fatalf("backend table: %d rows, want postgres and mariadb at least", len(cluster.Backends()))
	}
	for _, be := range cluster.Backends() {
		for _, p := range be.Packages {
			if !strings.Contains(deb+" ", " "+p+" ") {
				t.Errorf("backend %s: Debian package %s not in the Makefile's DEB_PKGS (%s)", be.Name, p, deb)
			}
			// Installed when missing: by a check of its own, or as the
			// package of a binary in NEED_BINS ("bin:package").
			if !strings.Contains(string(b), `missing="$$missing `+p+`"`) && !strings.Contains(string(b), ":"+p+" ") {
				t.Errorf("backend %s: the Makefile's apt-install does not install %s when missing", be.Name, p)
			}
		}
	}
}
