package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/docker"
	"github.com/locklab/locklab/cluster/providers/netns"
)

// Cleanup is the `cleanup` verb of bench and chaos: it removes the Docker
// containers and networks that interrupted runs of the docker provider left
// behind (everything labelled locklab=1 whose harness is gone; --all also
// removes those of runs still going), the netns namespaces and the lossy
// filesystem mounts of killed runs, and the port claims of ended
// processes.
func Cleanup(ctx context.Context, args []string, stdout, stderr io.Writer, cmd string) error {
	fs := FlagSet(cmd+" cleanup", stderr, "Usage: %s cleanup [--all] [-n]\n\n"+
		"Removes the Docker containers (with their volumes) and networks labelled %s=1 that\n"+
		"runs with --provider docker left behind when they were killed, and the network\n"+
		"namespaces named %s* (with the processes still in them) that runs with\n"+
		"--provider netns left, and the lossy filesystems (FUSE, for power-cut faults) of\n"+
		"runs killed before they unmounted them. A run that ends normally or by Ctrl-C removes its own. Runs\n"+
		"whose harness is still running are kept unless --all. It also removes the port claims (a file\n"+
		"per port under $TMPDIR/locklab-ports-<uid>) of locklab processes that ended.\n", cmd, docker.LabelLocklab, netns.Prefix)
	all := fs.Bool("all", false, "also remove the containers of runs whose harness is still running")
	dry := fs.Bool("n", false, "dry run: list what would be removed")
	verbose := fs.Bool("v", false, "a line per removal on stderr")
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usagef("%s cleanup takes no arguments (got %s)", cmd, strings.Join(fs.Args(), " "))
	}
	var log *slog.Logger
	if *verbose {
		log = Logger(stderr, true)
	}
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
	nres, nerr := netns.Cleanup(netns.CleanupOptions{All: *all, DryRun: *dry, Logger: log})
	fmt.Fprintf(stdout, "%s %d network namespace(s), %d process(es)\n", verb, len(nres.Namespaces), len(nres.Processes))
	for _, n := range nres.Namespaces {
		fmt.Fprintf(stdout, "  netns %s\n", n)
	}
	for _, k := range nres.Kept {
		fmt.Fprintf(stdout, "kept netns %s\n", k)
	}
	if nerr != nil {
		fmt.Fprintf(stderr, "netns: %v\n", nerr)
	}
	mounts, kept, merr := cluster.LossyMountCleanup("/", *all, *dry)
	fmt.Fprintf(stdout, "%s %d lossy filesystem mount(s)\n", verb, len(mounts))
	for _, m := range mounts {
		fmt.Fprintf(stdout, "  mount %s\n", m)
	}
	for _, k := range kept {
		fmt.Fprintf(stdout, "kept mount %s\n", k)
	}
	if merr != nil {
		fmt.Fprintf(stderr, "lossy mounts: %v\n", merr)
	}
	claims, cerr := cluster.PortClaimCleanup(*dry)
	fmt.Fprintf(stdout, "%s %d port claim(s) of ended processes\n", verb, claims)
	if cerr != nil {
		fmt.Fprintf(stderr, "%v\n", cerr)
	}
	res, err := docker.Cleanup(ctx, docker.CleanupOptions{All: *all, DryRun: *dry, Logger: log})
	fmt.Fprintf(stdout, "%s %d container(s), %d network(s)\n", verb, len(res.Containers), len(res.Networks))
	for _, c := range res.Containers {
		fmt.Fprintf(stdout, "  container %s\n", c)
	}
	for _, n := range res.Networks {
		fmt.Fprintf(stdout, "  network %s\n", n)
	}
	for _, k := range res.Kept {
		fmt.Fprintf(stdout, "kept run %s\n", k)
	}
	return errors.Join(nerr, merr, cerr, err)
}
