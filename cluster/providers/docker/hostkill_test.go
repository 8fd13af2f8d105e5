package docker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/docker"
	"github.com/locklab/locklab/testenv"
)

// TestDockerHostKill: the fallback for an engine that does not report a
// killed container's exit kills the right process, the container's init,
// and the engine then sees the container stop.
func TestDockerHostKill(t *testing.T) {
	c := startDocker(t, cluster.Spec{Redis: &cluster.RedisSpec{}})
	n, ok := c.Node("redis-0")
	if !ok {
		t.Fatal("no node redis-0")
	}
	if !docker.HostKill(n) {
		t.Fatal("redis-0 is not a container")
	}
	testenv.Eventually(t, 10*time.Second, "redis-0 stopped", func() error {
		if n.Alive() {
			return errors.New("still running")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
}

// startDocker starts spec with the docker provider from the local images
// (built first when missing); testenv closes it with the test.
func startDocker(t *testing.T, spec cluster.Spec) *cluster.Cluster {
	t.Helper()
	testenv.RequireDockerImages(t)
	spec.Provider = cluster.ProviderDocker
	spec.RunID = "test-" + t.Name()
	return testenv.Cluster(t, spec)
}
