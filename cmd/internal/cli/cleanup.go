package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/locklab/locklab/cluster"
)

// Cleanup is the `cleanup` verb of bench and chaos: it removes the Docker
// containers and networks that interrupted runs of the docker provider left
// behind (everything labelled locklab=1 whose harness is gone; --all also
// removes those of runs still going).
func Cleanup(ctx context.Context, args []string, stdout, stderr io.Writer, cmd string) error {
	fs := flag.NewFlagSet(cmd+" cleanup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	all := fs.Bool("all", false, "also remove the containers of runs whose harness is still running")
	dry := fs.Bool("n", false, "dry run: list what would be removed")
	verbose := fs.Bool("v", false, "a line per removal on stderr")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: %s cleanup [--all] [-n]\n\n"+
			"Removes the Docker containers (with their volumes) and networks labelled %s=1 that\n"+
			"runs with --provider docker left behind when they were killed. A run that ends\n"+
			"normally or by Ctrl-C removes its own. Runs whose harness is still running are kept\n"+
			"unless --all.\n\nFlags:\n", cmd, cluster.LabelLocklab)
		fs.PrintDefaults()
	}
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
	res, err := cluster.DockerCleanup(ctx, cluster.DockerCleanupOptions{All: *all, DryRun: *dry, Logger: log})
	verb := "removed"
	if *dry {
		verb = "would remove"
	}
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
	return err
}
