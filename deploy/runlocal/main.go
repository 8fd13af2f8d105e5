// Command runlocal runs a Kubernetes Indexed Job manifest of locklab's
// (deploy/k8s/*.yaml) on the local Docker engine, one container per
// completion index with exactly the manifest's image, command, args and
// env, then merges the shards with the host's chaos (`make deploy-local`):
//
//	go run ./deploy/runlocal [--manifest deploy/k8s/atlas-job.yaml] [--volume DIR] [--chaos bin/chaos]
//
// The image must exist (`make image`).
//
// Of locklab it imports only deploy; it never imports atlas, explore or
// cmd/chaos, whose binary it runs instead (docs/architecture.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/locklab/locklab/deploy"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "runlocal:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("runlocal", flag.ContinueOnError)
	fs.SetOutput(stderr)
	manifest := fs.String("manifest", "deploy/k8s/atlas-job.yaml", "the Indexed Job to run")
	volume := fs.String("volume", "results/deploy-local", "host folder standing for the results volume")
	chaos := fs.String("chaos", "bin/chaos", "the host's chaos binary, which merges the shards")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	j, err := deploy.ReadJob(*manifest)
	if err != nil {
		return err
	}
	l := deploy.Local{Volume: *volume, Chaos: *chaos,
		Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	fmt.Fprintf(stderr, "%s: %d indices, %d at once, image %s, args %q\n", j.File, j.Completions, j.Parallelism, j.Image, j.Args)
	out, err := l.Run(ctx, j)
	if out != nil {
		for _, sh := range out.Shards {
			if sh.Wall > 0 {
				fmt.Fprintf(stdout, "index %d: %s in %v (log %s)\n", sh.Index, sh.Dir, sh.Wall.Round(time.Millisecond), sh.Log)
			}
		}
		fmt.Fprintf(stdout, "shards: %v wall\n", out.Wall.Round(time.Millisecond))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "merged into %s:\n%s", out.Merged, out.Output)
	return nil
}
