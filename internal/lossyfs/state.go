package lossyfs

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
)

// pageSize is the granularity of the pre-images kept for a cut.
const pageSize = 4096

// state is what one file (one backing inode) has written since its last
// fsync: enough to put it back as it was then. Its methods are safe for
// concurrent use; a write holds mu across the backing write, so an fsync
// that starts meanwhile sees it either wholly before or wholly after.
type state struct {
	mu   sync.Mutex
	path string // relative to the mount, when first opened for writing or written
	// inode is the node the kernel knows the file by (guarded by FS.mu:
	// go-fuse makes a new one when the kernel forgot the old one and
	// looks the file up again).
	inode  *fs.Inode
	fd     int   // the backing file, O_RDWR, owned by the state
	synced int64 // length at the last fsync
	// pre holds the content at the last fsync of each page below synced
	// overwritten since (a page at the end may be short).
	pre     map[int64][]byte
	resized bool // truncated or allocated since the last fsync
	// untracked counts the open files that may write anywhere in the
	// file by passthrough, unseen (node.openMode): while there is one,
	// pre holds every page below synced.
	untracked int
}

func newState(backing, rel string, inode *fs.Inode) (*state, error) {
	fd, err := syscall.Open(backing, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("lossyfs: open %s: %w", rel, err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("lossyfs: stat %s: %w", rel, err)
	}
	return &state{path: rel, inode: inode, fd: fd, synced: st.Size, pre: map[int64][]byte{}}, nil
}

// keep saves the pre-image of the pages of [off, end) below synced not
// saved yet. The caller holds s.mu.
func (s *state) keep(off, end int64) error {
	end = min(end, s.synced)
	if off < 0 || off >= end {
		return nil
	}
	for p := off / pageSize; p*pageSize < end; p++ {
		if _, ok := s.pre[p]; ok {
			continue
		}
		buf := make([]byte, min(pageSize, s.synced-p*pageSize))
		n, err := syscall.Pread(s.fd, buf, p*pageSize)
		if err != nil {
			return fmt.Errorf("lossyfs: keep %s: %w", s.path, err)
		}
		s.pre[p] = buf[:n]
	}
	return nil
}

// sync marks the file's current content as fsynced: called as an fsync
// starts, since it makes durable what was written before it. It fails
// only when it cannot keep the content an unseen writer may change
// (untrack).
func (s *state) sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(s.fd, &st); err != nil {
		return nil // keep the old sync point: losing more is the safe error
	}
	s.synced = st.Size
	clear(s.pre)
	s.resized = false
	if s.untracked > 0 {
		return s.keep(0, s.synced)
	}
	return nil
}

// untrack counts one more (delta +1) or one less (-1) open file that
// writes unseen; from the first one on, the fsynced content of every
// page is kept.
func (s *state) untrack(delta int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if delta > 0 {
		if err := s.keep(0, s.synced); err != nil {
			return err
		}
	}
	s.untracked += delta
	return nil
}

// cut puts the file back as it was at its last fsync and reports the
// bytes lost (see lost) and whether anything changed.
func (s *state) cut() (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var st syscall.Stat_t
	if err := syscall.Fstat(s.fd, &st); err != nil {
		return 0, false, fmt.Errorf("lossyfs: stat %s: %w", s.path, err)
	}
	if len(s.pre) == 0 && st.Size == s.synced && !s.resized {
		return 0, false, nil
	}
	lost, err := s.lost(st.Size)
	if err != nil {
		return 0, false, err
	}
	for p, b := range s.pre {
		if _, err := syscall.Pwrite(s.fd, b, p*pageSize); err != nil {
			return 0, false, fmt.Errorf("lossyfs: restore %s: %w", s.path, err)
		}
	}
	if err := syscall.Ftruncate(s.fd, s.synced); err != nil {
		return 0, false, fmt.Errorf("lossyfs: truncate %s: %w", s.path, err)
	}
	clear(s.pre)
	s.resized = false
	return lost, true, nil
}

// lost counts the bytes written since the last fsync that a cut
// loses: those beyond the fsynced length, and those below it that now
// differ from their fsynced content. (Counting the writes themselves
// would count what the kernel's writeback cache sends again: it writes
// back whole pages.) size is the backing file's length; the caller
// holds s.mu.
func (s *state) lost(size int64) (int64, error) {
	lost := max(size-s.synced, 0)
	buf := make([]byte, pageSize)
	for p, b := range s.pre {
		n, err := syscall.Pread(s.fd, buf[:len(b)], p*pageSize)
		if err != nil {
			return 0, fmt.Errorf("lossyfs: read %s: %w", s.path, err)
		}
		for i := range n {
			if buf[i] != b[i] {
				lost++
			}
		}
	}
	return lost, nil
}

// length is the file's length at its last fsync.
func (s *state) length() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

func (s *state) close() { syscall.Close(s.fd) }
