package cluster

// Docker provider: which image runs each backend.

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Default images of the docker provider: the official images. When one is
// not present locally and an image built by `make images` is
// (locklab/redis, locklab/zookeeper, locklab/etcd, any tag), that one is
// used instead and the run log says so. Scenario files choose others with
// cluster.<backend>.image.
const (
	DefaultRedisImage     = "redis:7.2"
	DefaultZooKeeperImage = "zookeeper:3.9"
	DefaultEtcdImage      = "gcr.io/etcd-development/etcd:v3.5.17"
)

// LocalImageRepos are the repositories `make images` (images/build.sh)
// tags, per backend.
var LocalImageRepos = map[string]string{
	BackendRedis:     "locklab/redis",
	BackendZooKeeper: "locklab/zookeeper",
	BackendEtcd:      "locklab/etcd",
}

// image returns the image to run for spec, resolving the default once per
// cluster (see DefaultRedisImage).
func (p *dockerProvider) image(ctx context.Context, spec *containerSpec) (string, error) {
	key := spec.backend + "|" + spec.image
	p.imageMu.Lock() // one resolution (and one log line) per image
	defer p.imageMu.Unlock()
	p.mu.Lock()
	img, ok := p.images[key]
	p.mu.Unlock()
	if ok {
		return img, nil
	}
	img, err := resolveImage(ctx, p.cli, p.log, spec.backend, spec.image)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.images[key] = img
	p.mu.Unlock()
	return img, nil
}

func defaultImage(backend string) string {
	switch backend {
	case BackendRedis:
		return DefaultRedisImage
	case BackendZooKeeper:
		return DefaultZooKeeperImage
	case BackendEtcd:
		return DefaultEtcdImage
	}
	return ""
}

// resolveImage picks the image for a backend: the requested one, or the
// default official image when present locally, or else the newest
// locklab/<backend> image `make images` built. An image that is not
// present locally is pulled by testcontainers when the container is
// created (and only then).
func resolveImage(ctx context.Context, cli *testcontainers.DockerClient, log *slog.Logger, backend, requested string) (string, error) {
	if requested != "" {
		return requested, nil
	}
	def := defaultImage(backend)
	if _, err := cli.ImageInspect(ctx, def); err == nil {
		return def, nil
	}
	repo := LocalImageRepos[backend]
	res, err := cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("reference", repo)})
	if err != nil {
		return "", fmt.Errorf("list images: %w", err)
	}
	best, bestV := "", []int(nil)
	for _, im := range res.Items {
		for _, tag := range im.RepoTags {
			v := parseVersion(strings.TrimPrefix(tag, repo+":"))
			if v != nil && (best == "" || versionLess(bestV, v) || (!versionLess(v, bestV) && len(tag) < len(best))) {
				best, bestV = tag, v
			}
		}
	}
	if best == "" {
		return def, nil // testcontainers pulls it; launch explains a failure
	}
	log.Warn("docker: default image not present locally: using the one built by `make images`",
		"backend", backend, "default", def, "image", best)
	return best, nil
}

// parseVersion reads "7.0" or "7.0.15" (nil for other tags).
func parseVersion(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil
		}
		out = append(out, n)
	}
	return out
}

func versionLess(a, b []int) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}
