package testenv

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// Chromium loads the local page in headless Chromium with extra flags
// (--dump-dom, --screenshot=..., --window-size=...) and returns its
// standard output. The page gets 10 s of virtual time to settle; Chromium
// and its helper processes are killed after 2 minutes. It requires the
// chromium binary (RequireBinaries).
func Chromium(t testing.TB, page string, flags ...string) []byte {
	t.Helper()
	RequireBinaries(t, "chromium")
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
		"--hide-scrollbars", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000"}, flags...)
	cmd := exec.CommandContext(ctx, "chromium", append(args, "file://"+abs)...)
	// Chromium starts helper processes: kill the whole group on timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %s: %v\n%s", filepath.Base(page), err, tail(stderr.Bytes(), 2000))
	}
	return out
}

// ChromiumScreenshot renders page at width x height CSS pixels into a PNG
// beside it and returns the decoded image; it fails the test unless the
// PNG has that size and is not blank (a single colour).
func ChromiumScreenshot(t testing.TB, page string, width, height int) image.Image {
	t.Helper()
	shot := page + ".png"
	Chromium(t, page, "--screenshot="+shot, "--window-size="+strconv.Itoa(width)+","+strconv.Itoa(height))
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != width || b.Dy() != height {
		t.Fatalf("screenshot %s is %dx%d, want %dx%d", shot, b.Dx(), b.Dy(), width, height)
	}
	if colours := distinctColours(img, 3); colours < 3 {
		t.Fatalf("screenshot %s is blank (%d colours)", shot, colours)
	}
	return img
}

// distinctColours counts the colours of img, stopping at limit.
func distinctColours(img image.Image, limit int) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
