package lossyfs

import (
	"context"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a file or directory of the mount: go-fuse's loopback node,
// whose open files are tracked (file) and whose other ways of changing a
// file's data are tracked or refused.
type node struct {
	fs.LoopbackNode
	lfs *FS

	mu sync.Mutex
	// passthrough and cached count the node's open files the kernel
	// serves by passthrough and through the filesystem (see openMode);
	// everCached says one was served through the filesystem.
	passthrough, cached int
	everCached          bool
}

// ioMode is how the kernel serves an open file's reads and writes.
type ioMode int

const (
	// cachedIO: through the filesystem (and the kernel's page cache).
	cachedIO ioMode = iota
	// passthroughIO: the kernel reads and writes the backing file
	// itself, without a request (FOPEN_PASSTHROUGH).
	passthroughIO
	// untrackedIO: passthrough for a file that may write anywhere,
	// which the filesystem does not see: its state keeps the whole
	// file's fsynced content instead (state.untracked).
	untrackedIO
)

// openMode chooses how the kernel serves a file of n opened with flags
// and counts it until its release.
//
// On a mount without the writeback cache (with it, the kernel did not
// use passthrough: every append still came as a WRITE), a file opened
// for reading only or for appending only (O_APPEND, as Redis writes its
// AOF) is served by passthrough: reads never need the filesystem, and
// each append lands at the file's end, where a cut needs no saved
// content, only the length at the last fsync, and the fsync still comes
// to the filesystem. That saves the WRITE request of every append. Any
// other open for writing goes through the filesystem, which tracks it.
//
// The kernel serves an inode in one way at a time: while a file of it
// is open by passthrough, every open of it must be too (or fails with
// EIO), and the other way round. So a reader or appender goes through
// the filesystem once the node had a file through it (everCached: this
// also keeps go-fuse, which gives up the backing file at the release
// of any open file of a node, from releasing it under a passthrough
// file), and a writer of another kind waits for passthrough files to
// close (the counts drop at the RELEASE request, after the kernel's
// own) and, if one stays open, is served by passthrough too, untracked.
func (n *node) openMode(flags uint32) ioMode {
	n.mu.Lock()
	defer n.mu.Unlock()
	acc := flags & syscall.O_ACCMODE
	if acc == syscall.O_RDONLY || flags&syscall.O_APPEND != 0 {
		if !n.lfs.writeback && (n.passthrough > 0 || !n.everCached) {
			n.passthrough++
			return passthroughIO
		}
		n.cached++
		n.everCached = true
		return cachedIO
	}
	for wait := 0; n.passthrough > 0 && wait < 100; wait++ {
		n.mu.Unlock()
		time.Sleep(time.Millisecond)
		n.mu.Lock()
	}
	if n.passthrough > 0 {
		n.passthrough++
		return untrackedIO
	}
	n.cached++
	n.everCached = true
	return cachedIO
}

// released uncounts an open file of mode.
func (n *node) released(mode ioMode) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if mode == cachedIO {
		n.cached--
	} else {
		n.passthrough--
	}
}

// handle is the open file of n for the loopback's open file h opened
// with flags (see openMode).
func (n *node) handle(h fs.FileHandle, flags uint32) (fs.FileHandle, syscall.Errno) {
	f := &file{lf: h.(*fs.LoopbackFile), n: n, mode: n.openMode(flags)}
	switch f.mode {
	case passthroughIO:
		return &passthroughFile{f}, 0
	case untrackedIO:
		st, errno := n.state()
		if errno == 0 {
			errno = fs.ToErrno(st.untrack(+1))
		}
		if errno != 0 {
			f.n.released(f.mode)
			return nil, errno
		}
		return &passthroughFile{f}, 0
	}
	return f, 0
}

var (
	_ fs.NodeLookuper       = (*node)(nil)
	_ fs.NodeOpener         = (*node)(nil)
	_ fs.NodeCreater        = (*node)(nil)
	_ fs.NodeSetattrer      = (*node)(nil)
	_ fs.NodeCopyFileRanger = (*node)(nil)
	_ fs.NodeTmpfiler       = (*node)(nil)
)

// state is the node's tracked state, created at its first change or
// open for writing.
func (n *node) state() (*state, syscall.Errno) {
	return n.stateAt("")
}

// stateAt is state for a node whose path is rel (see FS.stateOf).
func (n *node) stateAt(rel string) (*state, syscall.Errno) {
	st, err := n.lfs.stateOf(n, rel)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return st, fs.OK
}

// truncate sets the node's length to size, keeping the pre-image of
// what it cuts off. A truncate to the length the file has changes
// nothing (Cut makes one, to set the kernel's idea of the length).
func (n *node) truncate(size int64) syscall.Errno {
	st, errno := n.state()
	if errno != 0 {
		return errno
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	var cur syscall.Stat_t
	if err := syscall.Fstat(st.fd, &cur); err != nil {
		return fs.ToErrno(err)
	}
	if cur.Size == size {
		return 0
	}
	if err := st.keep(size, st.synced); err != nil {
		return fs.ToErrno(err)
	}
	st.resized = true
	return fs.ToErrno(syscall.Ftruncate(st.fd, size))
}

// backingFlags are the flags the backing file of an open with flags is
// opened with: O_TRUNC is done apart, as a tracked truncate, and a
// write-only open reads too, because with the writeback cache the
// kernel reads the rest of a page a write covers in part through any
// open file. (go-fuse drops O_APPEND: the kernel gives each write its
// offset.)
func backingFlags(flags uint32) uint32 {
	flags &^= syscall.O_TRUNC
	if flags&syscall.O_ACCMODE == syscall.O_WRONLY {
		flags = flags&^syscall.O_ACCMODE | syscall.O_RDWR
	}
	return flags
}

// opened tracks the node opened with flags: one opened for writing gets
// its state now, so that Cut flushes it even when every page written
// is still in the kernel's cache; O_TRUNC is done as a tracked
// truncate. rel is as for stateAt.
func (n *node) opened(flags uint32, rel string) syscall.Errno {
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		return 0
	}
	if _, errno := n.stateAt(rel); errno != 0 {
		return errno
	}
	if flags&syscall.O_TRUNC != 0 {
		return n.truncate(0)
	}
	return 0
}

// Lookup is the loopback's, and tells the file's state of a new inode
// (see FS.relink).
func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 {
		n.lfs.relink(ch)
	}
	return ch, errno
}

// Open opens the backing file (see backingFlags).
func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	h, fl, errno := n.LoopbackNode.Open(ctx, backingFlags(flags))
	if errno != 0 {
		return nil, 0, errno
	}
	if errno := n.opened(flags, ""); errno != 0 {
		h.(fs.FileReleaser).Release(ctx)
		return nil, 0, errno
	}
	f, errno := n.handle(h, flags)
	if errno != 0 {
		h.(fs.FileReleaser).Release(ctx)
		return nil, 0, errno
	}
	return f, fl, 0
}

// Create creates the backing file (at once: a directory operation; see
// backingFlags).
func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	ch, h, fl, errno := n.LoopbackNode.Create(ctx, name, backingFlags(flags), mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	child := ch.Operations().(*node)
	if errno := child.opened(flags, filepath.Join(n.Path(nil), name)); errno != 0 {
		h.(fs.FileReleaser).Release(ctx)
		return nil, nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		out.Size = 0
	}
	f, errno := child.handle(h, flags)
	if errno != 0 {
		h.(fs.FileReleaser).Release(ctx)
		return nil, nil, 0, errno
	}
	return ch, f, fl, 0
}

// Setattr tracks a change of length made by path (truncate(2)); one made
// through an open file goes to file.Setattr.
func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok && f == nil {
		if errno := n.truncate(int64(sz)); errno != 0 {
			return errno
		}
		in.Valid &^= fuse.FATTR_SIZE
	}
	return n.LoopbackNode.Setattr(ctx, f, in, out)
}

// CopyFileRange is refused, so the kernel copies through read and
// write, which are tracked.
func (n *node) CopyFileRange(context.Context, fs.FileHandle, uint64, *fs.Inode, fs.FileHandle, uint64, uint64, uint64) (uint32, syscall.Errno) {
	return 0, syscall.EOPNOTSUPP
}

// Tmpfile (O_TMPFILE) is refused: an unnamed file would escape tracking.
func (n *node) Tmpfile(context.Context, uint32, uint32, *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

// file is an open file: go-fuse's loopback file, with every change to
// its data tracked by its node's state. It has no PassthroughFd: kernel
// passthrough would bypass the tracking (passthroughFile has one).
type file struct {
	lf   *fs.LoopbackFile
	n    *node
	mode ioMode
}

// passthroughFile is a file the kernel serves by passthrough (see
// node.openMode): its reads and writes never reach the filesystem.
type passthroughFile struct{ *file }

var _ fs.FilePassthroughFder = (*passthroughFile)(nil)

// PassthroughFd is the backing file the kernel reads and writes. (go-fuse
// gives every later open of the node whose handle has this method the
// same backing file while one is open: only passthrough files have it.)
func (p *passthroughFile) PassthroughFd() (int, bool) { return p.lf.PassthroughFd() }

var (
	_ fs.FileReader    = (*file)(nil)
	_ fs.FileWriter    = (*file)(nil)
	_ fs.FileWritever  = (*file)(nil)
	_ fs.FileFsyncer   = (*file)(nil)
	_ fs.FileSetattrer = (*file)(nil)
	_ fs.FileGetattrer = (*file)(nil)
	_ fs.FileAllocater = (*file)(nil)
	_ fs.FileReleaser  = (*file)(nil)
	_ fs.FileFlusher   = (*file)(nil)
	_ fs.FileLseeker   = (*file)(nil)
	_ fs.FileGetlker   = (*file)(nil)
	_ fs.FileSetlker   = (*file)(nil)
	_ fs.FileSetlkwer  = (*file)(nil)
	_ fs.FileStatxer   = (*file)(nil)
)

// write runs w with the pre-image of [off, off+size) kept and the state
// locked.
func (f *file) write(off, size int64, w func() (uint32, syscall.Errno)) (uint32, syscall.Errno) {
	st, errno := f.n.state()
	if errno != 0 {
		return 0, errno
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := st.keep(off, off+size); err != nil {
		return 0, fs.ToErrno(err)
	}
	return w()
}

func (f *file) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	return f.write(off, int64(len(data)), func() (uint32, syscall.Errno) { return f.lf.Write(ctx, data, off) })
}

func (f *file) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	var size int64
	for _, d := range data {
		size += int64(len(d))
	}
	return f.write(off, size, func() (uint32, syscall.Errno) { return f.lf.Writev(ctx, data, off) })
}

// Fsync makes the file's current content the one a cut returns to,
// then fsyncs the backing file (fdatasync for an fdatasync, as the
// server asked).
func (f *file) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	st, errno := f.n.state()
	if errno != 0 {
		return f.lf.Fsync(ctx, flags)
	}
	if err := st.sync(); err != nil {
		return fs.ToErrno(err)
	}
	if flags&fsyncDatasync != 0 {
		return fs.ToErrno(syscall.Fdatasync(st.fd))
	}
	return fs.ToErrno(syscall.Fsync(st.fd))
}

// fsyncDatasync is FUSE_FSYNC_FDATASYNC, FsyncIn's flag of an fdatasync.
const fsyncDatasync = 1

func (f *file) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if sz, ok := in.GetSize(); ok {
		if errno := f.n.truncate(int64(sz)); errno != 0 {
			return errno
		}
		in.Valid &^= fuse.FATTR_SIZE
	}
	return f.lf.Setattr(ctx, in, out)
}

// Allocate keeps the pre-image of what a punch, zero, collapse or insert
// changes (from off to the end: collapse and insert shift the rest);
// plain allocation changes no content below the synced length.
func (f *file) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	st, errno := f.n.state()
	if errno != 0 {
		return errno
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if mode&^1 != 0 { // anything beyond FALLOC_FL_KEEP_SIZE
		if err := st.keep(int64(off), st.synced); err != nil {
			return fs.ToErrno(err)
		}
	}
	st.resized = true
	return f.lf.Allocate(ctx, off, size, mode)
}

func (f *file) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return f.lf.Read(ctx, buf, off)
}
func (f *file) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return f.lf.Getattr(ctx, out)
}
func (f *file) Statx(ctx context.Context, flags, mask uint32, out *fuse.StatxOut) syscall.Errno {
	return f.lf.Statx(ctx, flags, mask, out)
}
func (f *file) Release(ctx context.Context) syscall.Errno {
	if f.mode == untrackedIO {
		if st, errno := f.n.state(); errno == 0 {
			_ = st.untrack(-1) // -1 cannot fail
		}
	}
	f.n.released(f.mode)
	return f.lf.Release(ctx)
}
func (f *file) Flush(ctx context.Context) syscall.Errno { return f.lf.Flush(ctx) }
func (f *file) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return f.lf.Lseek(ctx, off, whence)
}
func (f *file) Getlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32, out *fuse.FileLock) syscall.Errno {
	return f.lf.Getlk(ctx, owner, lk, flags, out)
}
func (f *file) Setlk(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlk(ctx, owner, lk, flags)
}
func (f *file) Setlkw(ctx context.Context, owner uint64, lk *fuse.FileLock, flags uint32) syscall.Errno {
	return f.lf.Setlkw(ctx, owner, lk, flags)
}
