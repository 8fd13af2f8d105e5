package docker

// Docker provider: which image runs each backend.

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/locklab/locklab/images"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// A backend's default image is its row's (TableBackend.DefaultImage:
// the official redis:7.2, zookeeper:3.9 and etcd images; none for the
// others). When the default is not present locally and an image built by
// `make images` is (locklab/<backend>, any tag), that one is used instead
// and the run log says so. When neither is present, the official image is
// pulled if a registry answers, else the locklab/* images are built on
// first use (EnsureLocalImages). Scenario files choose others with
// cluster.<backend>.image.

// LocalImageRepos are the repositories `make images` (images/build.sh)
// tags, per backend: locklab/<name> for Redis and for each table backend
// that runs under provider docker.
func LocalImageRepos() map[string]string {
	repos := map[string]string{}
	for _, b := range ImageBackends() {
		repos[b.Name] = "locklab/" + b.Name
	}
	return repos
}

// ImageBackends are the images `make images` builds: one for each row of
// the backend table that runs under provider docker.
func ImageBackends() []images.Backend {
	var out []images.Backend
	for _, b := range cluster.Backends() {
		if !slices.Contains(b.Providers, cluster.ProviderDocker) {
			continue
		}
		vp := b.VersionPackage
		if vp == "" && len(b.Packages) > 0 {
			vp = b.Packages[0]
		}
		cmd := "" // the server's program: what proves it installed
		if progs := append(slices.Clone(b.Installed), b.Binaries...); len(progs) > 0 {
			cmd = filepath.Base(progs[0])
		}
		out = append(out, images.Backend{Name: b.Name, VersionPackage: vp, Port: b.ClientPort, Command: cmd, Packages: b.Packages})
	}
	return out
}

// image returns the image to run for spec, resolving the default once per
// cluster (see defaultImage).
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

// prepareImages resolves the image of every backend the spec starts
// before Start's deadline (DefaultStartTimeout) begins: pulling a missing
// default, or building the locklab/* images on first use, takes minutes.
func (p *dockerProvider) prepareImages(ctx context.Context) error {
	s := p.c.Spec()
	for _, b := range cluster.Backends() {
		set, ok := s.SettingsOf(b)
		if !ok {
			continue
		}
		if _, err := p.image(ctx, &containerSpec{backend: b.Name, image: set.String(cluster.ImageField)}); err != nil {
			return err
		}
	}
	return nil
}

// defaultImage is the row's default image of backend ("" when none).
func defaultImage(backend string) string {
	b, _ := cluster.LookupBackend(backend)
	return b.DefaultImage
}

// resolveImage picks the image for a backend: the requested one (pulled
// by testcontainers when the container is created if it is missing), or
// the default official image when present locally, or else the newest
// locklab/<backend> image `make images` built (the only choice of a
// table backend, which has no official default). When neither is present it
// pulls the default; when no registry answers it builds the locklab/*
// images (EnsureLocalImages, progress on ImageBuildOutput) and uses them.
func resolveImage(ctx context.Context, cli *testcontainers.DockerClient, log *slog.Logger, backend, requested string) (string, error) {
	if requested != "" {
		return requested, nil
	}
	def := defaultImage(backend)
	if def != "" {
		if _, err := cli.ImageInspect(ctx, def); err == nil {
			return def, nil
		}
	}
	best, err := newestLocal(ctx, cli, backend)
	if err != nil {
		return "", err
	}
	if best != "" {
		if def != "" {
			log.Warn("docker: default image not present locally: using the one built by `make images`",
				"backend", backend, "default", def, "image", best)
		}
		return best, nil
	}
	// A table backend has no official default: only the locklab/ image.
	perr := errors.New("no official image for " + backend)
	if def != "" {
		perr = pull(ctx, cli, def)
		if perr == nil {
			return def, nil
		}
		if ctx.Err() != nil {
			return "", fmt.Errorf("pull %s: %w", def, ctx.Err())
		}
		fmt.Fprintf(ImageBuildOutput, "docker: image %s is not present locally and could not be pulled (%v)\n", def, perr)
	} else {
		def = LocalImageRepos()[backend]
	}
	if err := EnsureLocalImages(ctx, ImageBuildOutput); err != nil {
		return "", fmt.Errorf("docker: image %s is not present locally, could not be pulled (%v), and building the locklab/* images failed: %w", def, perr, err)
	}
	best, err = newestLocal(ctx, cli, backend)
	if err == nil && best == "" {
		err = fmt.Errorf("docker: images/build.sh finished but no %s image exists", LocalImageRepos()[backend])
	}
	return best, err
}

// newestLocal is the newest-versioned tag of the locklab/<backend> image
// present locally, "" when there is none.
func newestLocal(ctx context.Context, cli *testcontainers.DockerClient, backend string) (string, error) {
	repo := LocalImageRepos()[backend]
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
	return best, nil
}

// PullTimeout bounds the pull of a default image that is not present
// locally; a machine without a registry answers at once (no such host).
const PullTimeout = 5 * time.Minute

// pull pulls ref, waiting for the pull to finish.
func pull(ctx context.Context, cli *testcontainers.DockerClient, ref string) error {
	ctx, cancel := context.WithTimeout(ctx, PullTimeout)
	defer cancel()
	resp, err := cli.ImagePull(ctx, ref, client.ImagePullOptions{})
	if err != nil {
		return err
	}
	defer resp.Close()
	return resp.Wait(ctx)
}

// ImageBuildOutput receives the progress of a build of the locklab/*
// images that a docker run starts on first use: the commands' stderr.
var ImageBuildOutput io.Writer = os.Stderr

var buildMu sync.Mutex // one build at a time in a process

// EnsureLocalImages builds the images `make images` builds (locklab/redis,
// locklab/zookeeper and locklab/etcd from Debian packages, images.Build)
// when one of them is missing, writing progress to w, bounded by
// images.DefaultTimeout; it returns at once when they all exist. The
// docker provider calls it when a default image is missing and cannot be
// pulled; the tests call it (testenv.RequireDockerImages) so that both
// paths are the same code. It needs a Docker engine, and root for the
// first build.
func EnsureLocalImages(ctx context.Context, w io.Writer) error {
	buildMu.Lock()
	defer buildMu.Unlock()
	cli, err := dockerClient(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer cli.Close()
	missing, err := missingLocal(ctx, cli)
	if err != nil || len(missing) == 0 {
		return err
	}
	fmt.Fprintf(w, "docker: building %s from Debian packages (images/build.sh, as `make images`; a few minutes, once, up to %v)\n",
		strings.Join(missing, ", "), images.DefaultTimeout)
	ctx, cancel := context.WithTimeout(ctx, images.DefaultTimeout)
	defer cancel()
	t0 := time.Now()
	if err := images.Build(ctx, w, ImageBackends()); err != nil {
		return err
	}
	if missing, err = missingLocal(ctx, cli); err == nil && len(missing) > 0 {
		err = fmt.Errorf("images/build.sh finished without %s", strings.Join(missing, ", "))
	}
	if err == nil {
		fmt.Fprintf(w, "docker: images built in %v\n", time.Since(t0).Round(time.Second))
	}
	return err
}

// missingLocal lists the locklab image repositories without any tag.
func missingLocal(ctx context.Context, cli *testcontainers.DockerClient) ([]string, error) {
	var missing []string
	for b, repo := range LocalImageRepos() {
		best, err := newestLocal(ctx, cli, b)
		if err != nil {
			return nil, err
		}
		if best == "" {
			missing = append(missing, repo)
		}
	}
	sort.Strings(missing)
	return missing, nil
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
