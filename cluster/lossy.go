package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/locklab/locklab/internal/lossyfs"
)

// Lossy disks: with Spec.LossyDisks every node's data dir is a lossyfs
// mount (internal/lossyfs) over a backing dir, so a power cut can drop
// what the server wrote and never fsynced. The mount is made when the
// node is registered, before any of its files are written, and
// unmounted by Close once every server ended.

// DiskLoss is what a power cut discarded from a node's data dir.
type DiskLoss struct {
	// Files changed since their last fsync (relative to the data dir).
	Files []string
	// Bytes written to them since their last fsync.
	Bytes int64
}

// ErrNoLossyDisk means the node's data dir is not on a lossy
// filesystem: the cluster was started without Spec.LossyDisks.
var ErrNoLossyDisk = errors.New("cluster: data dir not on a lossy filesystem (Spec.LossyDisks)")

// LossyDisksWith says why provider cannot put its nodes' data dirs on
// lossy disks (a power-cut fault), naming those that can; nil when it
// can.
func LossyDisksWith(provider string) error {
	t, _ := TraitsOf(provider)
	if t.LossyDisks {
		return nil
	}
	why := t.NoLossyDisks
	if why == "" {
		why = "it does not say it can"
	}
	return fmt.Errorf("a power cut needs provider %s, not %s: %s",
		strings.Join(ProvidersWith(func(t Traits) bool { return t.LossyDisks }), " or "), provider, why)
}

// mountDisk puts n's data dir on a lossy filesystem over
// Dir/data/.disks/<node>.
func (c *Cluster) mountDisk(n *Node) error {
	backing := filepath.Join(c.dataDir, ".disks", n.Name)
	if err := os.MkdirAll(backing, 0o755); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	d, err := lossyfs.Mount(backing, n.dataDir, lossyfs.Options{Writeback: !c.syncsEveryWrite(n)})
	if err != nil {
		return fmt.Errorf("cluster: data dir of %s: %w", n.Name, err)
	}
	n.disk = d
	c.log.Debug("lossy disk mounted", "node", n.Name, "dir", n.dataDir)
	return nil
}

// syncsEveryWrite says whether n's server fsyncs each write before it
// answers (Redis appendfsync always, ZooKeeper and etcd with fsync on):
// its lossy filesystem then goes without the kernel's writeback cache,
// which only adds requests to every fsync (lossyfs.Options).
func (c *Cluster) syncsEveryWrite(n *Node) bool {
	b, ok := LookupBackend(n.backend)
	if !ok || b.SyncsEveryWrite == nil {
		return false
	}
	set, _ := c.spec.SettingsOf(b)
	return b.SyncsEveryWrite(set)
}

// unmountDisks unmounts every node's lossy filesystem; Close calls it
// once every server ended.
func (c *Cluster) unmountDisks() error {
	var errs []error
	for _, n := range c.Nodes() {
		if n.disk != nil {
			errs = append(errs, n.disk.Unmount())
		}
	}
	return errors.Join(errs...)
}

// PowerCut kills the server (SIGKILL to its process group, as Kill) and
// then discards everything its data dir received since the last fsync
// of each file: the files revert to their content and length at that
// fsync (directory changes stay). It returns what was discarded; Start
// brings the server back on what is left. The node's data dir must be
// on a lossy filesystem (Spec.LossyDisks), else ErrNoLossyDisk.
func (n *Node) PowerCut(ctx context.Context) (DiskLoss, error) {
	n.opMu.Lock()
	defer n.opMu.Unlock()
	if n.disk == nil {
		return DiskLoss{}, fmt.Errorf("power cut %s: %w", n.Name, ErrNoLossyDisk)
	}
	if err := n.kill(ctx); err != nil {
		return DiskLoss{}, err
	}
	// A Redis fork (an AOF rewrite) got the same SIGKILL but may still be
	// dying: wait until no process of the group runs, lest it write after
	// the cut (a zombie writes nothing).
	if pid := n.Pid(); pid > 0 {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for deadline := time.Now().Add(time.Second); groupRunning(pid) && time.Now().Before(deadline); {
			select {
			case <-ctx.Done():
				return DiskLoss{}, fmt.Errorf("power cut %s: %w", n.Name, ctx.Err())
			case <-tick.C:
			}
		}
	}
	loss, err := n.disk.Cut()
	if err != nil {
		return DiskLoss{}, fmt.Errorf("power cut %s: %w", n.Name, err)
	}
	n.c.log.Info("node power cut", "node", n.Name, "files", len(loss.Files), "bytes", loss.Bytes)
	return DiskLoss{Files: loss.Files, Bytes: loss.Bytes}, nil
}

// groupRunning reports whether a process of group pgid other than a
// zombie is left.
func groupRunning(pgid int) bool {
	for _, pid := range groupMembers(pgid) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) && s[i+2] != 'Z' {
			return true
		}
	}
	return false
}

// LossyDisk reports whether the node's data dir is on a lossy
// filesystem (PowerCut can act on it).
func (n *Node) LossyDisk() bool { return n.disk != nil }

// served reports whether a lossyfs mount still answers: a stat returns
// within half a second with anything but ENOTCONN (a mount whose harness
// is gone fails with ENOTCONN, or hangs when a process still holds its
// connection).
func served(mp string) bool {
	done := make(chan error, 1)
	go func() { _, err := os.Stat(mp); done <- err }() // may never return
	select {
	case err := <-done:
		return !errors.Is(err, syscall.ENOTCONN)
	case <-time.After(500 * time.Millisecond):
		return false
	}
}

// LossyMountCleanup detaches the lossy filesystems (lossyfs mounts)
// that killed runs left, under dir ("/" for every one): those whose
// harness is gone (the mount answers ENOTCONN), or every one with all.
// It returns the mountpoints detached and those kept.
func LossyMountCleanup(dir string, all, dryRun bool) (detached, kept []string, err error) {
	mps, err := lossyfs.Stale(dir)
	if err != nil {
		return nil, nil, err
	}
	var errs []error
	for _, mp := range mps {
		if !all && served(mp) {
			kept = append(kept, mp+" (its harness still serves it; --all detaches it)")
			continue
		}
		if !dryRun {
			_ = lossyfs.Abort(mp) // a server holding the connection would keep it hung
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				errs = append(errs, fmt.Errorf("cluster: unmount %s: %w", mp, err))
				continue
			}
		}
		detached = append(detached, mp)
	}
	return detached, kept, errors.Join(errs...)
}
