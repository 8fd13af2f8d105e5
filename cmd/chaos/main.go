// Command chaos runs locklab's fault scenarios and checks their
// expectations: each known failure of a distributed lock (a failover that
// loses the key, a holder paused past its lease, ...) becomes a reproducible
// regression test.
//
//	chaos run [--runs N] [--out DIR] SCENARIO...   exit 1 when an expectation fails, 2 on bad input,
//	                                               3 when none failed but some were inconclusive
//	chaos list                                     fault types and built-in fault scenarios
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/internal/cli"
	"github.com/locklab/locklab/scenarios"
)

func main() { cli.Main(run) }

const usage = `chaos: run fault scenarios against real servers and check their expectations.

Usage:
  chaos run [flags] SCENARIO...   run each scenario (--runs N times), print the
                                  verdict matrix; exit 1 when an expectation fails
  chaos list                      fault types and built-in scenarios
  chaos cleanup [--all]           remove containers left by interrupted docker runs
  chaos help                      this text

SCENARIO is a .yaml file or a built-in name. Exit codes: 0 every expectation
met, 1 one failed (or a run failed), 2 bad input (nothing was started), 3 none
failed but some safety claim was inconclusive (a fault did not apply, fewer
than min_visits visits after a fault, a resource-call error).
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		io.WriteString(stderr, usage)
		return cli.Usagef("no verb given")
	}
	switch args[0] {
	case "run":
		return cli.RunCommand(ctx, "chaos", args[1:], stdout, stderr, cli.RunChaos)
	case "list":
		return list(args[1:], stdout, stderr)
	case "cleanup":
		return cli.Cleanup(ctx, args[1:], stdout, stderr, "chaos")
	case "help", "-h", "--help":
		io.WriteString(stdout, usage)
		return nil
	}
	io.WriteString(stderr, usage)
	return cli.Usagef("unknown verb %q", args[0])
}

func list(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chaos list", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: chaos list\n\nPrints the fault types and every built-in scenario with its locks.")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &cli.UsageError{Err: err}
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT TYPES\tfields\teffect")
	for _, ft := range scenarios.FaultTypes() {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", ft, strings.Join(scenarios.FaultFields(ft), ", "), faultDoc[ft])
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	return cli.List(nil, stdout, stderr, "chaos")
}

// faultDoc is the effect column of DESIGN.md §4's fault table.
var faultDoc = map[string]string{
	"latency":      "delay on the link(s)",
	"bandwidth":    "throttle the link(s)",
	"partition":    "cut every link between the groups (blackhole: requests hang)",
	"reset":        "reset live connections",
	"pause":        "SIGSTOP the server, SIGCONT after for",
	"kill":         "SIGKILL the server",
	"restart":      "kill, wait delay, start again on the same data dir",
	"failover":     "kill a Redis primary, wait until Sentinel promotes a replica",
	"pause-client": "SIGSTOP a client process (holder: the one in the critical section)",
	"clock-jump":   "the server's clock jumps forward by offset: keys expire early (emulated)",
}
