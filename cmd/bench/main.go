// Command bench runs locklab's comparison benchmarks: every lock of a
// scenario on a fresh real cluster under the same workload, a summary table,
// and results/<scenario>-<time>/result.json.
//
//	bench run [flags] SCENARIO...
//	bench validate [flags] SCENARIO...
//	bench show SCENARIO
//	bench report [--out DIR] DIR...
//	bench list
//
// Run `bench help` or `bench VERB --help` for details.
//
// It owns the bench binary and its verbs (run, list, show, validate, init,
// client-check, check, report, calibrate, cleanup, deps). Of locklab it
// imports only calibrate, checker, clients, cluster,
// cluster/providers/docker, cmd/internal/cli, images,
// locks/external, recheck, report and workload: runs and scenarios go
// through cmd/internal/cli, so it never imports runner or scenarios itself,
// and nothing imports it (docs/architecture.md).
package main

import (
	"context"
	"io"

	"github.com/locklab/locklab/cmd/internal/cli"
)

func main() { cli.Main(run) }

const usage = `bench: compare distributed locks on real servers.

Usage:
  bench run [flags] SCENARIO...   run scenarios, print a table, write results/
                                  (--runs N: N runs each and their spread; a scenario
                                  with expect exits as chaos run: 0 met, 1 failed,
                                  3 inconclusive)
  bench validate SCENARIO...      check scenarios as run would, starting nothing
  bench show SCENARIO             print a built-in scenario's YAML, to start from
  bench report [--out DIR] DIR... re-render a results folder; compare several
  bench check DIR...              recompute every safety figure from history.jsonl
                                  and compare with result.json (exit 1 if they differ)
  bench list                      built-in scenarios and lock names
  bench calibrate [flags]         the harness against each backend's own limit
  bench cleanup [--all]           remove containers and network namespaces left by killed runs
  bench deps [--missing|--images] the servers' Debian packages and whether they are installed
  bench init [--exec] [--backend B] [--name NAME] [DIR]
                                  a starter scenario for your own lock (and, with
                                  --exec, a starter client program)
  bench client-check [--backend B] -- CMD ARGS...
                                  check a client program against a real server
  bench version, --version        module version and commit of this binary
  bench help                      this text

SCENARIO is a .yaml file or a built-in name (see 'bench list'). Flags may come
before or after the scenarios; after --, every argument is a scenario. Exit codes:
0 done, 1 a run failed (or an expectation failed), 2 bad input (nothing was
started), 3 inconclusive. Each verb takes --help.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Dispatch(ctx, "bench", usage, cli.RunBench, map[string]cli.Verb{
		"report":       cli.NoContext(reportCmd),
		"check":        cli.NoContext(checkCmd),
		"show":         cli.NoContext(func(args []string, stdout, stderr io.Writer) error { return cli.Show(args, stdout, stderr, "bench") }),
		"list":         cli.NoContext(func(args []string, stdout, stderr io.Writer) error { return cli.List(args, stdout, stderr, "bench") }),
		"calibrate":    calibrateCmd,
		"init":         cli.NoContext(initCmd),
		"client-check": clientCheckCmd,
		"deps":         cli.NoContext(depsCmd),
	}, args, stdout, stderr)
}
