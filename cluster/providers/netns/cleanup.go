package netns

import (
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// CleanupOptions select what Cleanup removes.
type CleanupOptions struct {
	// All removes the namespaces of every locklab run, including runs
	// whose harness (the pid in the namespace's name) is still running.
	All bool
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Logger receives a line per removal; nil discards.
	Logger *slog.Logger
}

// CleanupResult lists what Cleanup found.
type CleanupResult struct {
	Namespaces []string // names of the namespaces removed
	Processes  []int    // pids killed in them
	Kept       []string // namespaces kept, each "NAME (why)"
}

// Cleanup removes what killed runs of provider netns left: the
// network namespaces named Prefix<pid>-... (with the veth links, the
// bridge and the nftables rules inside them) and the processes still
// running in them. A run closed normally, or by Ctrl-C, leaves nothing.
// Errors of single removals are joined.
func Cleanup(opts CleanupOptions) (CleanupResult, error) {
	var res CleanupResult
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	names, err := listNetns(Prefix)
	if err != nil {
		return res, fmt.Errorf("cluster: netns cleanup: %w", err)
	}
	if len(names) > 0 && os.Geteuid() != 0 {
		return res, fmt.Errorf("cluster: netns cleanup: %d namespaces %s* to remove: %w", len(names), Prefix, ErrNeedsRoot)
	}
	sort.Strings(names)
	var errs []error
	for _, name := range names {
		pid := netnsOwner(name)
		if !opts.All && pid > 0 && pid != os.Getpid() && cluster.ProcessAlive(pid) {
			res.Kept = append(res.Kept, fmt.Sprintf("%s (harness pid %d is running; --all removes it)", name, pid))
			continue
		}
		procs := netnsProcesses(namedNetnsInode(name))
		if opts.DryRun {
			res.Namespaces = append(res.Namespaces, name)
			res.Processes = append(res.Processes, procs...)
			continue
		}
		for _, p := range procs {
			if err := syscall.Kill(p, syscall.SIGKILL); err == nil {
				res.Processes = append(res.Processes, p)
			}
		}
		waitGone(procs, 5*time.Second)
		if err := removeNetns(name); err != nil {
			errs = append(errs, err)
			continue
		}
		res.Namespaces = append(res.Namespaces, name)
		log.Info("netns removed", "netns", name, "processes", len(procs))
	}
	return res, errors.Join(errs...)
}

// netnsOwner is the harness pid in a namespace's name; 0 when it has none.
func netnsOwner(name string) int {
	rest := strings.TrimPrefix(name, Prefix)
	p, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(p)
	if err != nil {
		return 0
	}
	return pid
}

// waitGone polls until none of pids runs, or d passed.
func waitGone(pids []int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		alive := false
		for _, p := range pids {
			alive = alive || cluster.ProcessAlive(p)
		}
		if !alive {
			return
		}
		time.Sleep(20 * time.Millisecond) // poll: the processes' parents reap them
	}
}
