package testenv

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all" // the backend table's rows
)

// ClusterStartTimeout bounds Cluster's start.
const ClusterStartTimeout = 60 * time.Second

// Cluster starts spec's servers for a test: it requires the binaries the
// spec needs (RequireBinaries: skip under -short, fail in CI when missing),
// puts Dir under t.TempDir() when empty, logs through t.Log when no Logger
// is set (only warnings, so tests stay quiet), starts within
// ClusterStartTimeout and closes the cluster in t.Cleanup. Startup times are
// logged.
func Cluster(t testing.TB, spec cluster.Spec) *cluster.Cluster {
	t.Helper()
	var bins []string
	if spec.Provider == "" || spec.Provider == cluster.ProviderLocal || spec.Provider == cluster.ProviderNetns {
		for name := range spec.Backends {
			if _, ok := cluster.LookupBackend(name); !ok {
				t.Fatalf("no backend %q in the table", name)
			}
		}
		for _, b := range cluster.Backends() {
			if _, ok := spec.SettingsOf(b); ok {
				bins = append(bins, b.Binaries...)
				RequireFiles(t, b.Files...)
			}
		}
	}
	RequireBinaries(t, bins...)
	if spec.Dir == "" {
		spec.Dir = t.TempDir()
	}
	if spec.Logger == nil {
		spec.Logger = slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), ClusterStartTimeout)
	defer cancel()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close cluster: %v", err)
		}
	})
	info := c.Info()
	t.Logf("cluster up (logs %s/logs): startup %v, versions %v", c.Dir(), info.Startup, info.Versions)
	return c
}

// RequireFiles is RequireBinaries for files that must exist (jars).
func RequireFiles(t testing.TB, paths ...string) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs real servers; skipped under -short")
	}
	for _, p := range paths {
		if !fileExists(p) {
			Unavailable(t, "%s not found (run `make deps`)", p)
		}
	}
}

// tWriter sends log lines to t.Log.
type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
