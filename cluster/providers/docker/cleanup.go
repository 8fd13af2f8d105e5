package docker

import (
	"context"
	"errors"
	"fmt"
	"github.com/locklab/locklab/cluster"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
)

// CleanupOptions select what Cleanup removes.
type CleanupOptions struct {
	// All removes the containers and networks of every locklab run,
	// including runs whose harness is still running. By default a run is
	// kept when its harness process (LabelHost, LabelPid, LabelStart) is
	// alive on this host, or ran on another host (it cannot be checked).
	All bool
	// Run, when set, limits the cleanup to that run's containers and
	// networks (label LabelRun); other runs are not even looked at.
	Run string
	// DryRun lists what would be removed and removes nothing.
	DryRun bool
	// Logger receives a line per removal; nil discards.
	Logger *slog.Logger
}

// CleanupResult lists what Cleanup found.
type CleanupResult struct {
	Containers []string // names of the containers removed
	Networks   []string // names of the networks removed
	Kept       []string // runs kept, each "RUN (why)"
}

// Cleanup removes what interrupted runs of the docker provider left
// behind: containers (with their anonymous volumes) and networks labelled
// LabelLocklab=1. A run closed normally leaves nothing; one whose harness
// was killed (SIGKILL, a second Ctrl-C, a crash) leaves its containers
// running. It returns what was removed; errors of single removals are
// joined.
func Cleanup(ctx context.Context, opts CleanupOptions) (CleanupResult, error) {
	var res CleanupResult
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cli, err := dockerClient(ctx, log)
	if err != nil {
		return res, err
	}
	defer cli.Close()
	filter := make(client.Filters).Add("label", LabelLocklab+"=1")
	if opts.Run != "" {
		filter = filter.Add("label", LabelRun+"="+opts.Run)
	}
	ctrs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return res, fmt.Errorf("docker: list containers: %w", err)
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return res, fmt.Errorf("docker: list networks: %w", err)
	}
	keep := map[string]string{} // run -> why
	decide := func(labels map[string]string) bool {
		run := labels[LabelRun]
		if opts.All {
			return false
		}
		if _, ok := keep[run]; ok {
			return true
		}
		if why := harnessAlive(labels); why != "" {
			keep[run] = why
			return true
		}
		return false
	}
	var errs []error
	for _, c := range ctrs.Items {
		if decide(c.Labels) {
			continue
		}
		name := strings.TrimPrefix(firstOr(c.Names, c.ID), "/")
		if !opts.DryRun {
			_, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove container %s: %w", name, err))
				continue
			}
		}
		log.Info("removed container", "name", name, "run", c.Labels[LabelRun], "dry-run", opts.DryRun)
		res.Containers = append(res.Containers, name)
	}
	for _, n := range nets.Items {
		if decide(n.Labels) {
			continue
		}
		if !opts.DryRun {
			if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
				continue
			}
		}
		log.Info("removed network", "name", n.Name, "run", n.Labels[LabelRun], "dry-run", opts.DryRun)
		res.Networks = append(res.Networks, n.Name)
	}
	for run, why := range keep {
		res.Kept = append(res.Kept, run+" ("+why+")")
	}
	sort.Strings(res.Kept)
	if err := errors.Join(errs...); err != nil {
		return res, fmt.Errorf("docker: cleanup: %w", err)
	}
	return res, nil
}

func firstOr(s []string, def string) string {
	if len(s) > 0 {
		return s[0]
	}
	return def
}

// harnessAlive says why the harness that created a container or network
// may still be running ("" when it is not): it runs on another host, or
// its process (pid and start time) is alive here.
func harnessAlive(labels map[string]string) string {
	host, _ := os.Hostname()
	if h := labels[LabelHost]; h != "" && h != host {
		return "created on host " + h + "; --all removes it"
	}
	pid, err := strconv.Atoi(labels[LabelPid])
	if err != nil || pid <= 0 {
		return ""
	}
	if !cluster.ProcessAlive(pid) {
		return ""
	}
	if start := labels[LabelStart]; start != "" && start != procStart(pid) {
		return "" // the pid was reused by another process
	}
	return "harness pid " + strconv.Itoa(pid) + " is running; --all removes it"
}

// procStart is the start time of process pid (clock ticks since boot,
// field 22 of /proc/<pid>/stat), "" when unknown: with the pid it
// identifies a process, since pids are reused.
func procStart(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:]) // field 3 (state) is f[0]
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
