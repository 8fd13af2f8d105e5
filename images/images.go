// Package images builds locklab's server images for the docker provider
// from Debian packages, without a container registry: Build runs build.sh
// (the script behind `make images`), embedded here so tests and tools need
// no checkout path. See build.sh for what it makes.
// It is a leaf: it imports nothing of locklab, and cluster imports it for
// the docker provider (docs/architecture.md).
package images

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Script is images/build.sh.
//
//go:embed build.sh
var Script string

// DefaultTimeout bounds a Build from scratch: debootstrap and the package
// installation take about 2-4 minutes with a nearby mirror.
const DefaultTimeout = 15 * time.Minute

// Backend is one server image build.sh makes: locklab/<Name>, the base
// image (which holds every backend's Packages) tagged with the version of
// VersionPackage (a dpkg-query pattern), exposing Port, with Command as
// its default command.
type Backend struct {
	Name           string
	VersionPackage string
	Port           int
	Command        string
	Packages       []string
}

// Env is what build.sh reads the backends from (the variable
// LOCKLAB_IMAGE_BACKENDS): a line each, "name version-package port
// command package...".
func Env(backends []Backend) string {
	var b strings.Builder
	for _, be := range backends {
		fmt.Fprintf(&b, "%s %s %s %s %s\n", be.Name, be.VersionPackage, strconv.Itoa(be.Port), be.Command,
			strings.Join(be.Packages, " "))
	}
	return b.String()
}

// Build builds the images of backends that are missing (a few docker
// calls when none is) and returns when they exist. Progress lines go to
// w. It needs a Docker engine, and root when the base image must be built.
func Build(ctx context.Context, w io.Writer, backends []Backend) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", Script, "images/build.sh")
	cmd.Env = append(os.Environ(), "LOCKLAB_IMAGE_BACKENDS="+Env(backends))
	cmd.Stdout, cmd.Stderr = w, w
	// Cancelling stops the whole script (debootstrap, apt-get in the
	// chroot) with SIGTERM, so its trap unmounts and removes its work dir.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("images: build: %w", ctx.Err())
		}
		return fmt.Errorf("images: build: %w", err)
	}
	return nil
}
