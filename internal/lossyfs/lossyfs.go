package lossyfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FSType is the type /proc/mounts shows for a lossyfs mount; Stale and
// UnmountStale find leftover mounts by it.
const FSType = "fuse.locklab-lossyfs"

// FS is one mounted lossy filesystem. Its methods are safe for
// concurrent use.
type FS struct {
	backing, mountpoint string
	server              *fuse.Server
	root                *fs.Inode
	writeback           bool // Options.Writeback

	mu      sync.Mutex
	files   map[uint64]*state // by backing inode (go-fuse's stable Ino)
	unmount sync.Once
	err     error
}

// Loss is what a Cut discarded.
type Loss struct {
	// Files are the files that changed since their last fsync (paths
	// relative to the mount, as when first opened for writing or
	// written), sorted.
	Files []string
	// Bytes are the bytes written to them since their last fsync that
	// the cut undid: those beyond the length at that fsync, and those
	// below it that differed from their content then.
	Bytes int64
}

// Options are a mount's settings.
type Options struct {
	// Writeback turns on the kernel's writeback cache: written pages
	// stay in the kernel and reach the filesystem in bulk (at an fsync,
	// a close, or when the kernel writes dirty pages back) instead of
	// one request per write(2). It pays for a server that writes often
	// and fsyncs seldom (Redis appendfsync everysec: 0.95 of a plain
	// disk's throughput with it, about 0.75 without) and costs one that
	// fsyncs every write (appendfsync always: about 0.77 with it, 0.90
	// without; ZooKeeper forcing its log: 0.70-0.77 with, 0.80-0.85
	// without; docs/faults.md). Without it, files opened for reading
	// only or appending only go by kernel passthrough (node.openMode).
	Writeback bool

	// trace, when set, gets go-fuse's debug log: a line per request
	// (tests count the requests a write pattern costs).
	trace io.Writer
}

// Mount mounts at mountpoint (an existing, empty directory) a
// filesystem passing through to the directory backing. It needs
// /dev/fuse and root (or fusermount3 on PATH). Unmount undoes it.
func Mount(backing, mountpoint string, o Options) (*FS, error) {
	backing, err := filepath.Abs(backing)
	if err != nil {
		return nil, fmt.Errorf("lossyfs: %w", err)
	}
	lfs := &FS{backing: backing, mountpoint: mountpoint, files: map[uint64]*state{}, writeback: o.Writeback}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, fmt.Errorf("lossyfs: backing %s: %w", backing, err)
	}
	root := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, lfs: lfs}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	// Every change goes through this mount (Cut drops the kernel's
	// caches of what it changes), so the kernel may cache names and
	// attributes: without it, each append asks for the size again.
	//
	// With Options.Writeback the kernel keeps written pages and sends
	// them later, in bulk, instead of one request per write(2); Cut first
	// makes it send them (flush). HANDLE_KILLPRIV_V2 leaves clearing
	// setuid bits to the filesystem (the loopback's backing writes do
	// it), so the kernel stops asking for security.capability before
	// every write (the superblock gets SB_NOSEC). That holds only until
	// the kernel next refreshes the file's attributes, and without the
	// writeback cache a write invalidates them: a server that stats its
	// file between writes (ZooKeeper, at every transaction) made the
	// kernel ask again at each write. DisableXAttrs answers the first
	// xattr request ENOSYS, after which the kernel asks for none and
	// every xattr call on the mount fails with EOPNOTSUPP (in power-cut
	// runs of Redis, ZooKeeper, etcd and NATS every xattr request was
	// that kernel check).
	caps := uint64(fuse.CAP_HANDLE_KILLPRIV_V2)
	if o.Writeback {
		caps |= fuse.CAP_WRITEBACK_CACHE
	}
	sec := time.Second
	opts := &fs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec, NegativeTimeout: &sec,
		MountOptions: fuse.MountOptions{
			FsName: "locklab", Name: strings.TrimPrefix(FSType, "fuse."),
			DirectMount: true, MaxBackground: 64,
			ExtraCapabilities: caps, DisableXAttrs: true,
		},
	}
	if o.trace != nil {
		opts.MountOptions.Debug, opts.MountOptions.Logger = true, log.New(o.trace, "", 0)
	}
	server, err := fs.Mount(mountpoint, root.RootNode, opts)
	if err != nil {
		return nil, fmt.Errorf("lossyfs: mount %s: %w", mountpoint, err)
	}
	lfs.server = server
	lfs.root = root.RootNode.EmbeddedInode()
	closeOnExec()
	return lfs, nil
}

// closeOnExec marks every /dev/fuse descriptor of the process
// close-on-exec. go-fuse opens /dev/fuse without it, so each server the
// harness starts would inherit the connection: when the harness dies, a
// server thread blocked in a request of the mount then keeps the
// connection open itself and the mount hangs instead of failing with
// ENOTCONN. (A server started by another goroutine during Mount may still
// inherit it; Abort undoes that case.)
func closeOnExec() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && target == "/dev/fuse" {
			syscall.CloseOnExec(fd)
		}
	}
}

// Mountpoint is where the filesystem is mounted.
func (f *FS) Mountpoint() string { return f.mountpoint }

// stateOf returns n's state, created at n's first change or open for
// writing. rel is n's path in the mount, or "" for n.Path (a node Create
// makes is not linked yet).
func (f *FS) stateOf(n *node, rel string) (*state, error) {
	ino := n.StableAttr().Ino
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.files[ino]; ok {
		st.inode = n.EmbeddedInode()
		return st, nil
	}
	if rel == "" {
		rel = n.Path(nil)
	}
	st, err := newState(filepath.Join(f.backing, rel), rel, n.EmbeddedInode())
	if err != nil {
		return nil, err
	}
	f.files[ino] = st
	return st, nil
}

// relink makes ch the inode of its file's state, if it has one: go-fuse
// makes a new inode when the kernel looks up a file again after it
// forgot it, and Cut reaches the kernel's idea of the file through it.
func (f *FS) relink(ch *fs.Inode) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if st, ok := f.files[ch.StableAttr().Ino]; ok {
		st.inode = ch
	}
}

// Cut discards what every file received since its last fsync: each
// reverts to its content and length at that fsync. Call it while
// nothing writes to the mount (the server killed): a write racing a cut
// may survive it.
//
// With the kernel's writeback cache, written pages may still be in the
// kernel: Cut first opens and closes each file written through the
// mount, and the close makes the kernel send them (as writes, which a
// cut then undoes; a close is no fsync). After it restores a file it
// truncates it through the mount to its length, since the kernel
// trusts its own idea of a file's length over the filesystem's, and
// drops the kernel's cached pages of it.
func (f *FS) Cut() (Loss, error) {
	type entry struct {
		st     *state
		path   string // through the mount
		linked bool   // path is valid: the file is not unlinked
		inode  *fs.Inode
	}
	f.mu.Lock()
	files := make([]entry, 0, len(f.files))
	for _, st := range f.files {
		path, linked := f.mounted(st.inode)
		files = append(files, entry{st, path, linked, st.inode})
	}
	f.mu.Unlock()
	var loss Loss
	var errs []error
	for _, fl := range files {
		if fl.linked && f.writeback { // else the kernel holds no written page
			if err := flush(fl.path); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		lost, changed, err := fl.st.cut()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !changed {
			continue
		}
		loss.Files = append(loss.Files, fl.st.path)
		loss.Bytes += lost
		if fl.linked {
			if err := syscall.Truncate(fl.path, fl.st.length()); err != nil {
				errs = append(errs, fmt.Errorf("lossyfs: set the length of %s: %w", fl.st.path, err))
			}
		}
		fl.inode.NotifyContent(0, 0) // the kernel's pages are stale
	}
	slices.Sort(loss.Files)
	return loss, errors.Join(errs...)
}

// mounted is the path through the mount of the file of inode, and
// whether the file still has one (neither it nor a directory above it
// unlinked).
func (f *FS) mounted(inode *fs.Inode) (string, bool) {
	var names []string
	for n := inode; n != f.root; {
		name, parent := n.Parent()
		if parent == nil {
			return "", false
		}
		names = append(names, name)
		n = parent
	}
	slices.Reverse(names)
	return filepath.Join(append([]string{f.mountpoint}, names...)...), true
}

// flush opens and closes path: with the writeback cache, the close makes
// the kernel send the file's dirty pages and waits until they are
// written.
func flush(path string) error {
	fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return nil // unlinked meanwhile: nothing reads it again
		}
		return fmt.Errorf("lossyfs: flush %s: %w", path, err)
	}
	if err := syscall.Close(fd); err != nil {
		return fmt.Errorf("lossyfs: flush %s: %w", path, err)
	}
	return nil
}

// Unmount unmounts the filesystem (lazily, when a process still holds a
// file open) and releases what it kept. The backing directory keeps
// the files as they are. Later calls return the first call's result.
func (f *FS) Unmount() error {
	f.unmount.Do(func() {
		if err := f.server.Unmount(); err != nil {
			// Busy: detach it; the kernel finishes when the last user goes.
			if derr := syscall.Unmount(f.mountpoint, syscall.MNT_DETACH); derr != nil {
				f.err = fmt.Errorf("lossyfs: unmount %s: %w", f.mountpoint, errors.Join(err, derr))
			}
		}
		f.mu.Lock()
		for _, st := range f.files {
			st.close()
		}
		clear(f.files)
		f.mu.Unlock()
	})
	return f.err
}

// Stale lists the lossyfs mounts (of any process) whose mountpoint is
// under dir ("/" for all), from /proc/self/mounts.
func Stale(dir string) ([]string, error) {
	fh, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, fmt.Errorf("lossyfs: %w", err)
	}
	defer fh.Close()
	var out []string
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != FSType {
			continue
		}
		mp := unescape(fields[1])
		if dir == "/" || mp == dir || strings.HasPrefix(mp, strings.TrimSuffix(dir, "/")+"/") {
			out = append(out, mp)
		}
	}
	return out, sc.Err()
}

// Abort ends the FUSE connection of the lossyfs mount at mountpoint
// (through /sys/fs/fuse/connections, mounting the fusectl filesystem
// there when it is not): every request waiting on it fails, so a mount
// whose server is gone but whose connection some process still holds
// stops hanging and can be detached.
func Abort(mountpoint string) error {
	dev, err := mountDev(mountpoint)
	if err != nil {
		return err
	}
	const ctl = "/sys/fs/fuse/connections"
	abort := filepath.Join(ctl, strconv.Itoa(dev), "abort")
	if _, err := os.Stat(abort); err != nil {
		_ = syscall.Mount("none", ctl, "fusectl", 0, "")
	}
	if err := os.WriteFile(abort, []byte("1"), 0o200); err != nil {
		return fmt.Errorf("lossyfs: abort %s: %w", mountpoint, err)
	}
	return nil
}

// mountDev is the minor device number of the lossyfs mount at
// mountpoint (its FUSE connection id), from /proc/self/mountinfo: a stat
// of a hung mount would hang.
func mountDev(mountpoint string) (int, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0, fmt.Errorf("lossyfs: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || unescape(f[4]) != mountpoint || !strings.Contains(line, " - "+FSType+" ") {
			continue
		}
		_, minor, ok := strings.Cut(f[2], ":")
		if n, err := strconv.Atoi(minor); ok && err == nil {
			return n, nil
		}
	}
	return 0, fmt.Errorf("lossyfs: no lossyfs mount at %s", mountpoint)
}

// UnmountStale detaches every lossyfs mount under dir (see Stale): those
// a harness killed before it could unmount left behind. It returns the
// mountpoints it detached.
func UnmountStale(dir string) ([]string, error) {
	mps, err := Stale(dir)
	if err != nil {
		return nil, err
	}
	var done []string
	var errs []error
	for _, mp := range mps {
		_ = Abort(mp)
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("lossyfs: unmount %s: %w", mp, err))
			continue
		}
		done = append(done, mp)
	}
	return done, errors.Join(errs...)
}

// unescape undoes /proc/mounts' octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
