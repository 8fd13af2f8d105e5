package lossyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bothCaches runs test on a fresh mount with the kernel's writeback cache
// and on one without it: what a cut keeps and drops must not depend on it.
func bothCaches(t *testing.T, test func(t *testing.T, f *FS, mp string)) {
	for _, wb := range []bool{true, false} {
		t.Run(fmt.Sprintf("writeback=%v", wb), func(t *testing.T) {
			f, mp := mount(t, Options{Writeback: wb})
			test(t, f, mp)
		})
	}
}

// mount mounts a lossyfs over a fresh backing directory for the test.
// Without /dev/fuse it skips, and fails under CI=true, where the
// machine is expected to have it.
func mount(t testing.TB, o Options) (*FS, string) {
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
	f, err := Mount(backing, mp, o)
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

func TestCut(t *testing.T) { bothCaches(t, testCut) }

func testCut(t *testing.T, f *FS, mp string) {
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
func TestAppendFdatasync(t *testing.T) { bothCaches(t, testAppendFdatasync) }

func testAppendFdatasync(t *testing.T, f *FS, mp string) {
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

// TestAppenderModes: readers and appenders are served by passthrough
// without the writeback cache, and opens of a file that overlap in
// either order still work and are undone by a cut (see node.openMode):
// a reader opened before or beside an appender reads what it appended,
// a writer at an offset opened beside an appender has its overwrite
// undone by the cut, as the appender's unsynced tail is, and an
// appender opened beside a writer through the filesystem goes through
// it too.
func TestAppenderModes(t *testing.T) { bothCaches(t, testAppenderModes) }

func testAppenderModes(t *testing.T, f *FS, mp string) {
	p := filepath.Join(mp, "log")
	appendTo := func(s string, sync bool) {
		t.Helper()
		fh, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(s); err != nil {
			t.Fatal(err)
		}
		if sync {
			if err := fh.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendTo("synced.", true)

	// A reader first, then an appender.
	r, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	appendTo("a.", false)
	if got, err := io.ReadAll(r); err != nil || string(got) != "synced.a." {
		t.Errorf("reader opened before an appender reads %q, %v", got, err)
	}
	r.Close()

	// An appender first, then a reader and a writer at an offset.
	a, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.WriteString("b."); err != nil {
		t.Fatal(err)
	}
	if got := string(content(t, p)); got != "synced.a.b." {
		t.Errorf("reader opened beside an appender reads %q", got)
	}
	write(t, p, []byte("S"), 0, false)
	if _, err := a.WriteString("c."); err != nil {
		t.Fatal(err)
	}
	if got := string(content(t, p)); got != "Synced.a.b.c." {
		t.Errorf("after a write at offset 0 beside the appender: %q", got)
	}
	a.Close()

	loss, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if got := string(content(t, p)); got != "synced." {
		t.Errorf("after the cut %q, want %q", got, "synced.")
	}
	if want := int64(len("a.b.c.") + 1); loss.Bytes != want {
		t.Errorf("loss %+v, want %d bytes", loss, want)
	}

	// A writer through the filesystem open: an appender goes through it too.
	w, err := os.OpenFile(p, os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	appendTo("d.", true)
	if got := string(content(t, p)); got != "synced.d." {
		t.Errorf("appended beside a writer: %q", got)
	}
}

func TestStale(t *testing.T) { bothCaches(t, testStale) }

func testStale(t *testing.T, f *FS, mp string) {
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

// backing is the path of the backing file of the mounted path p.
func backing(f *FS, mp, p string) string {
	rel, err := filepath.Rel(mp, p)
	if err != nil {
		panic(err)
	}
	return filepath.Join(f.backing, rel)
}

// TestWritebackCut cuts while written pages are still in the kernel's
// writeback cache (the file still open, never closed nor fsynced): the
// cut must drop them, not let the kernel write them back later, keep
// what was fsynced, and leave the length right when read through the
// mount, so that an append after the cut lands at the fsynced end.
func TestWritebackCut(t *testing.T) {
	f, mp := mount(t, Options{Writeback: true})
	testWritebackCut(t, f, mp)
}

func testWritebackCut(t *testing.T, f *FS, mp string) {
	p := filepath.Join(mp, "log")
	synced := bytes.Repeat([]byte("s"), 6000)
	fh, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	// Opened before the writes: an open drops the kernel's cached pages,
	// after writing back dirty ones.
	fo, err := os.OpenFile(p, os.O_WRONLY, 0) // Go refuses WriteAt with O_APPEND
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	// A file created and written, never fsynced: it reached the mount
	// only as a create.
	fresh, err := os.Create(filepath.Join(mp, "fresh"))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.WriteString("never fsynced"); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(synced); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.Write(bytes.Repeat([]byte("u"), 5000)); err != nil { // append
		t.Fatal(err)
	}
	if _, err := fo.WriteAt([]byte("over"), 10); err != nil { // below the fsynced length
		t.Fatal(err)
	}
	// The kernel holds the writes: none reached the backing file.
	if got := content(t, backing(f, mp, p)); !bytes.Equal(got, synced) {
		t.Fatalf("backing file before the cut: %d bytes (%q...), want the %d fsynced ones: no writeback cache?",
			len(got), got[:20], len(synced))
	}
	loss, err := f.Cut()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fresh", "log"}; !slices.Equal(loss.Files, want) || loss.Bytes != 5004+13 {
		t.Errorf("loss %+v, want files %v, %d bytes", loss, want, 5004+13)
	}
	if got := content(t, filepath.Join(mp, "fresh")); len(got) != 0 {
		t.Errorf("a file never fsynced reads %q after the cut, want empty", got)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != int64(len(synced)) {
		t.Errorf("length through the mount after the cut %d, want %d", st.Size(), len(synced))
	}
	if got := content(t, p); !bytes.Equal(got, synced) {
		t.Errorf("after the cut: %d bytes, want the %d fsynced ones", len(got), len(synced))
	}
	// Closing the writers' files now sends nothing back.
	for _, w := range []*os.File{fh, fo, fresh} {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := content(t, p); !bytes.Equal(got, synced) {
		t.Errorf("after the writer closed: %d bytes, want %d", len(got), len(synced))
	}
	if got := content(t, filepath.Join(mp, "fresh")); len(got) != 0 {
		t.Errorf("a file never fsynced reads %q after its writer closed it, want empty", got)
	}
	// A new writer appends at the fsynced end.
	fh2, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh2.Close()
	if _, err := fh2.WriteString("next"); err != nil {
		t.Fatal(err)
	}
	if err := fh2.Close(); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(synced, []byte("next"))
	if got := content(t, p); !bytes.Equal(got, want) {
		t.Errorf("append after the cut: %d bytes, want %d", len(got), len(want))
	}
	if got := content(t, backing(f, mp, p)); !bytes.Equal(got, want) {
		t.Errorf("backing file after the append: %d bytes, want %d", len(got), len(want))
	}
}

// TestWriteOnly writes part of a page of a file opened write-only whose
// page the kernel does not hold: with the writeback cache the kernel
// reads the rest of the page through that write-only file.
func TestWriteOnly(t *testing.T) { bothCaches(t, testWriteOnly) }

func testWriteOnly(t *testing.T, f *FS, mp string) {
	p := filepath.Join(mp, "old")
	old := bytes.Repeat([]byte("o"), 5000)
	if err := os.WriteFile(backing(f, mp, p), old, 0o644); err != nil { // not through the mount
		t.Fatal(err)
	}
	fh, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close() // before the unmount, even when the test fails
	if _, err := fh.WriteAt([]byte("new"), 100); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatalf("fsync of the write-only file: %v", err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
	want := slices.Concat(old[:100], []byte("new"), old[103:])
	if got := content(t, backing(f, mp, p)); !bytes.Equal(got, want) {
		t.Errorf("backing file: %d bytes, want %d", len(got), len(want))
	}
	if loss, err := f.Cut(); err != nil || len(loss.Files) != 0 {
		t.Errorf("cut after the fsync: %+v, %v", loss, err)
	}
	if got := content(t, p); !bytes.Equal(got, want) {
		t.Errorf("after the cut: %d bytes, want %d", len(got), len(want))
	}
}

// requestLog counts the requests in go-fuse's debug log by opcode (lines
// "rx 12: WRITE n8 {...").
type requestLog struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *requestLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "rx" && strings.HasSuffix(f[1], ":") {
			l.n[f[2]]++
		}
	}
	return len(b), nil
}

func (l *requestLog) take() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := l.n
	l.n = map[string]int{}
	return n
}

// TestRequests counts the requests that reach the filesystem for each
// write and fsync of the patterns the servers that fsync every write
// use: every request is a round trip through the harness, and they are
// what the mount costs. ZooKeeper's transaction log is preallocated (a
// byte written 64 MB out) and stat'ed before each write; Redis's
// appendfsync always appends. Without the writeback cache a write
// invalidates the kernel's attributes, so ZooKeeper's stat costs a
// GETATTR; the refreshed attributes made the kernel ask for
// security.capability (GETXATTR) at the next write until the mount
// disabled xattrs. Redis's appends go by passthrough there (the kernel
// writes the backing file), which leaves the FSYNC.
func TestRequests(t *testing.T) {
	const n = 200
	for _, c := range []struct {
		name      string
		writeback bool
		pattern   func(t testing.TB, dir string, n int)
		max       float64 // requests per write+fsync
	}{
		{"zookeeper", false, zkPattern, 3},  // WRITE, FSYNC, GETATTR
		{"zookeeper", true, zkPattern, 3},   // WRITE, SETATTR (mtime), FSYNC; a READ per page
		{"append", false, appendPattern, 1}, // FSYNC: the appends go by passthrough
		{"append", true, appendPattern, 3},
	} {
		t.Run(fmt.Sprintf("%s/writeback=%v", c.name, c.writeback), func(t *testing.T) {
			l := &requestLog{n: map[string]int{}}
			_, mp := mount(t, Options{Writeback: c.writeback, trace: l})
			c.pattern(t, mp, 0) // open and prepare: not counted
			l.take()
			c.pattern(t, mp, n)
			got := l.take()
			if got["FSYNC"] != n {
				t.Fatalf("%d FSYNC requests for %d fdatasyncs (debug log format changed?): %v", got["FSYNC"], n, got)
			}
			total := 0
			for op, k := range got {
				if op != "INTERRUPT" { // a signal to the writer (the Go runtime's), not a cost of the write
					total += k
				}
			}
			per := float64(total) / n
			t.Logf("per write+fdatasync %.2f requests: %v", per, got)
			if per > c.max+0.1 {
				t.Errorf("%.2f requests per write+fdatasync, want at most %.0f: %v", per, c.max, got)
			}
		})
	}
}

// zkPattern is ZooKeeper's FileTxnLog: with n 0 it creates the log and
// preallocates it (a header, a byte 64 MB out, an fdatasync); then n
// times the position, a stat of the file, a write of a transaction
// inside the preallocated length and an fdatasync.
func zkPattern(t testing.TB, dir string, n int) {
	t.Helper()
	p := filepath.Join(dir, "log.1")
	flags := os.O_WRONLY
	if n == 0 {
		flags |= os.O_CREATE | os.O_TRUNC
	}
	fh, err := os.OpenFile(p, flags, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if n == 0 {
		if _, err := fh.Write(make([]byte, 16)); err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt([]byte{0}, 64<<20-1); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
			t.Fatal(err)
		}
		return
	}
	off := int64(16)
	txn := bytes.Repeat([]byte("t"), 150)
	for range n {
		if _, err := os.Stat(p); err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(txn, off); err != nil {
			t.Fatal(err)
		}
		off += int64(len(txn))
		if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
			t.Fatal(err)
		}
	}
}

// appendPattern is Redis's appendfsync always: an append and an
// fdatasync per command (the file opened once per call).
func appendPattern(t testing.TB, dir string, n int) {
	t.Helper()
	fh, err := os.OpenFile(filepath.Join(dir, "appendonly.aof"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for range n {
		if _, err := fh.WriteString("*3\r\n$3\r\nSET\r\n$4\r\nlock\r\n$5\r\ntoken\r\n"); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Fdatasync(int(fh.Fd())); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoXattrs: the mount has no extended attributes (see Mount).
func TestNoXattrs(t *testing.T) {
	_, mp := mount(t, Options{})
	p := filepath.Join(mp, "f")
	write(t, p, []byte("x"), 0, false)
	for i := range 2 { // the second is answered by the kernel itself
		if _, err := syscall.Getxattr(p, "user.x", make([]byte, 16)); !errors.Is(err, syscall.EOPNOTSUPP) {
			t.Errorf("getxattr #%d: %v, want EOPNOTSUPP", i+1, err)
		}
	}
	if err := syscall.Setxattr(p, "user.x", []byte("v"), 0); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("setxattr: %v, want EOPNOTSUPP", err)
	}
	if _, err := syscall.Listxattr(p, make([]byte, 64)); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("listxattr: %v, want EOPNOTSUPP", err)
	}
	if err := syscall.Removexattr(p, "user.x"); !errors.Is(err, syscall.EOPNOTSUPP) {
		t.Errorf("removexattr: %v, want EOPNOTSUPP", err)
	}
}

// BenchmarkPatterns times ZooKeeper's transaction (a stat, a write inside
// the preallocated log, an fdatasync) and Redis's appendfsync always (an
// append and an fdatasync) on the plain backing directory and through a
// mount, with and without the kernel's writeback cache: what a server
// that fsyncs every write pays for the lossy filesystem, per operation.
//
//	go test -run - -bench Patterns ./internal/lossyfs
func BenchmarkPatterns(b *testing.B) {
	for _, p := range []struct {
		name    string
		pattern func(t testing.TB, dir string, n int)
	}{{"zookeeper", zkPattern}, {"append", appendPattern}} {
		for _, disk := range []string{"plain", "lossy", "lossy-writeback"} {
			b.Run(p.name+"/"+disk, func(b *testing.B) {
				dir := b.TempDir()
				if disk != "plain" {
					_, dir = mount(b, Options{Writeback: disk == "lossy-writeback"})
				}
				p.pattern(b, dir, 0)
				b.ResetTimer()
				p.pattern(b, dir, b.N)
			})
		}
	}
}

// TestRedisAlwaysRate compares Redis's own rate of SETs with
// appendfsync always (one connection: every SET waits for its append
// and fdatasync) on a plain directory and through a mount, in rounds
// that alternate: what the mount costs a server that fsyncs every
// write, without the harness's clients. It runs only when
// LOSSYFS_REDIS_ROUNDS is set (a number of rounds), with redis-server
// and redis-benchmark on PATH:
//
//	LOSSYFS_REDIS_ROUNDS=15 go test -run RedisAlwaysRate -v ./internal/lossyfs
func TestRedisAlwaysRate(t *testing.T) {
	rounds, err := strconv.Atoi(os.Getenv("LOSSYFS_REDIS_ROUNDS"))
	if err != nil || rounds < 1 {
		t.Skip("LOSSYFS_REDIS_ROUNDS not set")
	}
	var ratios []float64
	for range rounds {
		plain := redisSetRate(t, t.TempDir())
		_, mp := mount(t, Options{})
		lossy := redisSetRate(t, mp)
		ratios = append(ratios, lossy/plain)
		t.Logf("plain %.0f SET/s, through the mount %.0f: %.2f", plain, lossy, lossy/plain)
	}
	slices.Sort(ratios)
	t.Logf("median %.2f of plain disk over %d rounds", ratios[len(ratios)/2], rounds)
}

// redisSetRate runs redis-server with appendfsync always in dir and
// returns redis-benchmark's SETs per second over one connection.
func redisSetRate(t *testing.T, dir string) float64 {
	t.Helper()
	const port = "16390"
	srv := exec.Command("redis-server", "--port", port, "--dir", dir, "--save", "",
		"--appendonly", "yes", "--appendfsync", "always")
	if err := srv.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	for i := 0; exec.Command("redis-cli", "-p", port, "ping").Run() != nil; i++ {
		if i == 50 {
			t.Fatal("redis-server did not answer within 5 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, err := exec.Command("redis-benchmark", "-p", port, "-t", "set", "-c", "1", "-n", "3000", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-benchmark: %v: %s", err, out)
	}
	m := regexp.MustCompile(`SET: ([\d.]+) requests per second`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("redis-benchmark: no rate in %q", out)
	}
	rate, _ := strconv.ParseFloat(string(m[1]), 64)
	return rate
}
