// Command chaos runs locklab's fault scenarios and checks their
// expectations: each known failure of a distributed lock (a failover that
// loses the key, a holder paused past its lease, ...) becomes a reproducible
// regression test.
//
//	chaos run [--runs N] [--out DIR] SCENARIO...   exit 1 when an expectation fails, 2 on bad input,
//	                                               3 when none failed but some were inconclusive
//	chaos validate [flags] SCENARIO...             check scenarios, starting nothing
//	chaos list                                     fault types and built-in fault scenarios
//	chaos atlas [--runs N] [--parallel K] [--shard i/n] [--resume DIR]   the safety atlas
//	chaos atlas merge DIR...                       join atlas shards
//	chaos explore [--budget D | --runs N] [--seed S] ...   random fault schedules, findings, shrinking
//	chaos explore merge DIR...                     join explore shards
//
// It owns the chaos binary and its verbs (run, list, validate, atlas,
// explore, cleanup). Of locklab it imports only atlas, cmd/internal/cli,
// explore, faults, locks and locks/external: runs and scenarios go through
// cmd/internal/cli, so it never imports runner or scenarios itself, and
// nothing imports it (docs/architecture.md).
package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/faults"
)

func main() { cli.Main(run) }

const usage = `chaos: run fault scenarios against real servers and check their expectations.

Usage:
  chaos run [flags] SCENARIO...   run each scenario (--runs N times), print the
                                  verdict matrix; exit 1 when an expectation fails
  chaos validate SCENARIO...      check scenarios as run would, starting nothing
  chaos list                      fault types and built-in scenarios
  chaos atlas [flags]             every lock against every fault family, N seeded
                                  runs per cell: atlas.json|md|html|png (atlas -h)
  chaos atlas merge DIR...        join atlas shards into one atlas
  chaos explore [flags]           random fault schedules: findings, each shrunk to a
                                  minimal scenario (explore -h)
  chaos explore merge DIR...      join explore shards into one exploration
  chaos cleanup [--all]           remove containers and network namespaces left by killed runs
  chaos version, --version        module version and commit of this binary
  chaos help                      this text

SCENARIO is a .yaml file or a built-in name; flags may come before or after
the scenarios (after --, every argument is a scenario). Exit codes: 0 every
expectation met, 1 one failed (or a run failed), 2 bad input (nothing was
started), 3 none failed but some safety claim was inconclusive (a fault did not
apply or bite, fewer than min_visits visits or 2 contenders in a fault's
window, a resource-call error).
--format json writes only JSON to stdout, one result.json document per run;
the matrix then goes to stderr.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Dispatch(ctx, "chaos", usage, cli.RunChaos, map[string]cli.Verb{
		"list":    cli.NoContext(list),
		"atlas":   cli.Atlas,
		"explore": exploreCmd,
	}, args, stdout, stderr)
}

func list(args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("chaos list", stderr, "Usage: chaos list\n\nPrints the fault types and every built-in scenario with its locks.\n")
	if _, err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT TYPES\tfields\teffect")
	for _, name := range faults.Types() {
		ft, _ := faults.Lookup(name)
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, strings.Join(ft.Fields(), ", "), ft.Doc)
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	return cli.List(nil, stdout, stderr, "chaos")
}
