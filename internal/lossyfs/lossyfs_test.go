package lossyfs

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// mount mounts a lossyfs over a fresh backing directory for the test.
// Without /dev/fuse it skips, and fails under CI=true, where the
// machine is expected to have it.
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("/dev/fuse missing: %v", err)
		}
		t.Skipf("/dev/fuse missing: %v", err)
	}
	dir := t.TempDir()
	backing, mp := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Mount(backing, mp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mp
}

func write(t *testing.T, path string, data []byte, off int64, sync bool) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := fh.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func content(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCut(t *testing.T) {
	f, mp := mount(t)
	synced := bytes.Repeat([]byte("s"), 10000) // spans three pages
	kept, lost, appended := filepath.Join(mp, "kept"), filepath.Join(mp, "lost"), filepath.Join(mp, "appended")
	write(t, kept, synced, 0, true)
	write(t, lost, []byte("never fsynced"), 0, false)
	write(t, appended, synced, 0, true)
	write(t, appended, []byte("tail"), int64(len(synced)), false) // append
	write(t, appended, []byte("overwrite"), 4090, false)          // across a page boundary
	if err := os.Truncate(kept, 3); err != nil {                  // by path, after the fsync
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(mp, "dir", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}

	// Reads see what was written, fsynced or not.
	if got := content(t, lost); string(got) != "never fsynced" {
		t.Fatalf("read before the cut: %q", got)
	}
	want := slices.Concat(synced[:4090], []byte("overwrite"), synced[4099:], []byte("tail"))
	if got := content(t, appended); !bytes.Equal(got, want) {
		t.Fatalf("read before the cut: %d bytes, want %d", len(got), len(want))
	}
	if got := content(t, kept); len(got) != 3 {
		t.Fatalf("truncated file reads %d bytes, want 3", len(got))
	}

	loss, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"appended", "kept", "lost"}; !slices.Equal(loss.Files, want) {
		t.Errorf("loss files %v, want %v", loss.Files, want)
	}
	if want := int64(len("never fsynced") + len("tail") + len("overwrite")); loss.Bytes != want {
		t.Errorf("loss bytes %d, want %d", loss.Bytes, want)
	}
	if got := content(t, lost); len(got) != 0 {
		t.Errorf("a file never fsynced reads %q after the cut, want empty", got)
	}
	if got := content(t, appended); !bytes.Equal(got, synced) {
		t.Errorf("fsynced then changed file: %d bytes after the cut, want its %d fsynced ones", len(got), len(synced))
	}
	if got := content(t, kept); !bytes.Equal(got, synced) {
		t.Errorf("fsynced then truncated file: %d bytes after the cut, want %d", len(got), len(synced))
	}
	if _, err := os.Stat(filepath.Join(mp, "dir", "sub")); err != nil {
		t.Errorf("directories pass through and survive a cut: %v", err)
	}

	// A second cut loses nothing; the mount keeps working after a cut.
	if loss, err := f.Cut(); err != nil || len(loss.Files) != 0 {
		t.Errorf("second cut: %+v, %v", loss, err)
	}
	write(t, lost, []byte("again"), 0, true)
	if loss, _ := f.Cut(); len(loss.Files) != 0 || string(content(t, lost)) != "again" {
		t.Errorf("write+fsync after a cut: lost %+v, reads %q", loss, content(t, lost))
	}
}

// TestAppendFdatasync is Redis's appendfsync: O_APPEND writes, each
// second an fdatasync; what came after the last one is lost.
func TestAppendFdatasync(t *testing.T) {
	f, mp := mount(t)
	p := filepath.Join(mp, "appendonly.aof")
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"SET a 1\n", "SET b 2\n"} {
		if _, err := fh.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteString("SET lock x\n"); err != nil {
		t.Fatal(err)
	}
	fh.Close() // close persists nothing
	loss, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(content(t, p)); got != "SET a 1\nSET b 2\n" {
		t.Errorf("after the cut %q", got)
	}
	if loss.Bytes != int64(len("SET lock x\n")) {
		t.Errorf("loss %+v", loss)
	}
}

func TestStale(t *testing.T) {
	f, mp := mount(t)
	got, err := Stale(filepath.Dir(mp))
	if err != nil || !slices.Equal(got, []string{mp}) {
		t.Fatalf("Stale = %v, %v; want [%s]", got, err, mp)
	}
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got, err := Stale(filepath.Dir(mp)); err != nil || len(got) != 0 {
		t.Fatalf("after Unmount: Stale = %v, %v", got, err)
	}
}
