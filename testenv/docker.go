package testenv

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster/providers/docker"
)

// RequireDocker skips the test under -short and checks that a Docker engine
// answers. Unlike a server binary, an engine is not something `make deps`
// can install, so where none answers the test is skipped with the reason,
// in CI too (issue: "skipped with a clear message only where no Docker
// engine exists"); where one answers, every docker test runs and a failure
// to build the images fails them.
func RequireDocker(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a Docker engine; skipped under -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := docker.Available(ctx); err != nil {
		t.Skipf("SKIPPED: no Docker engine answers (%v); the docker provider is untested on this machine", err)
	}
}

var (
	imagesOnce sync.Once
	imagesErr  error
)

// RequireDockerImages is RequireDocker plus the server images the docker
// provider uses offline (locklab/redis, locklab/zookeeper, locklab/etcd,
// locklab/postgres, locklab/mariadb, locklab/nats):
// when they are missing it builds them once per test binary, as `make
// images` does and as the provider does on first use
// (docker.EnsureLocalImages, bounded by images.DefaultTimeout; a few
// minutes), logging the build's progress. A failed build fails the test.
// With an official image present locally (redis:7.2, ...) the provider uses
// that one instead; the build is then still done, so that both paths stay
// tested.
func RequireDockerImages(t testing.TB) {
	t.Helper()
	RequireDocker(t)
	imagesOnce.Do(func() {
		var out strings.Builder
		imagesErr = docker.EnsureLocalImages(context.Background(), &out)
		if out.Len() > 0 {
			t.Logf("docker images were missing: %s", out.String())
		}
	})
	if imagesErr != nil {
		t.Fatalf("build docker images: %v", imagesErr)
	}
}

// DockerLeftovers lists the containers and networks labelled with run
// (docker.LabelRun; "" means every locklab run) that still exist, as
// "container NAME" and "network NAME".
func DockerLeftovers(t testing.TB, run string) []string {
	t.Helper()
	label := docker.LabelLocklab + "=1"
	if run != "" {
		label = docker.LabelRun + "=" + run
	}
	var out []string
	for _, kind := range []string{"container", "network"} {
		args := []string{"ps", "-a", "--filter", "label=" + label, "--format", "{{.Names}}"}
		if kind == "network" {
			args = []string{"network", "ls", "--filter", "label=" + label, "--format", "{{.Name}}"}
		}
		b, err := exec.Command("docker", args...).Output()
		if err != nil {
			t.Fatalf("docker %s: %v", strings.Join(args, " "), err)
		}
		for _, name := range strings.Fields(string(b)) {
			out = append(out, fmt.Sprintf("%s %s", kind, name))
		}
	}
	return out
}
