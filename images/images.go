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
	"os/exec"
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

// Build builds the images that are missing (a few docker calls when none
// is) and returns when they exist. Progress lines go to w. It needs a
// Docker engine, and root when the base image must be built.
func Build(ctx context.Context, w io.Writer) error {
	cmd := exec.CommandContext(ctx, "sh", "-c", Script, "images/build.sh")
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
