package docker_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster/providers/docker"
	"github.com/locklab/locklab/testenv"
)

// TestEnsureLocalImages: the one copy of "build the locklab/* images when
// missing" that the docker provider (on first use, when the default image
// cannot be pulled) and the tests share. After it every locklab image
// repository has a tag, and a second call finds them and builds nothing.
func TestEnsureLocalImages(t *testing.T) {
	testenv.RequireDocker(t)
	ctx := context.Background()
	var first strings.Builder
	if err := docker.EnsureLocalImages(ctx, &first); err != nil {
		t.Fatalf("EnsureLocalImages: %v\n%s", err, first.String())
	}
	if first.Len() > 0 {
		t.Logf("built:\n%s", first.String())
	}
	for backend, repo := range docker.LocalImageRepos() {
		out, err := exec.Command("docker", "images", "-q", "--filter", "reference="+repo+":*").Output()
		if err != nil || len(strings.TrimSpace(string(out))) == 0 {
			t.Errorf("%s: no %s image after EnsureLocalImages (%v)", backend, repo, err)
		}
	}
	var second strings.Builder
	if err := docker.EnsureLocalImages(ctx, &second); err != nil || second.Len() > 0 {
		t.Errorf("second call: %v, output %q; want nothing to do", err, second.String())
	}
}
