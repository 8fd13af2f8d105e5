// Package cli holds what cmd/bench and cmd/chaos share: exit codes, the
// signal-aware context, loading scenario arguments, the list, run and
// cleanup verbs, and what every command does first in main (register every
// lock through locks/all; become a client process when started as one,
// workload.MaybeWorker). It starts no server itself: runs go through
// runner. Only the commands import it.
// Of locklab it imports only atlas, checker, cluster, internal/suggest,
// internal/version, locks, locks/all, locks/external, report, runner,
// scenarios and workload; it never imports cmd/bench or cmd/chaos, nor
// calibrate or explore, which the commands import themselves
// (docs/architecture.md).
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	_ "github.com/locklab/locklab/locks/all" // register every lock
	"github.com/locklab/locklab/scenarios"
	"github.com/locklab/locklab/workload"
)

// Exit codes shared by the commands.
const (
	ExitOK       = 0
	ExitFailed   = 1 // a run failed or an expectation was not met
	ExitBadInput = 2 // bad flags or scenario files; nothing was started
	// ExitInconclusive: nothing failed, but some safety claim had no
	// evidence (a fault did not apply, too few visits after a fault, a
	// resource-call error).
	ExitInconclusive = 3
)

// ExitCodeError ends the command with Code and prints nothing: the
// harness that ran inside a network namespace (provider netns) already
// reported, and this is its exit code.
type ExitCodeError struct{ Code int }

func (e *ExitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }

// UsageError is bad input: the command prints it and exits ExitBadInput.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ErrFailed marks a completed command whose outcome is a failure (exit 1);
// the command has already printed why.
var ErrFailed = errors.New("failed")

// ErrInconclusive marks a completed command none of whose expectations
// failed but some were inconclusive (exit 3); already printed.
var ErrInconclusive = errors.New("inconclusive")

// Main runs a command's run function with a context cancelled by SIGINT or
// SIGTERM and exits with its code. A second signal exits at once (the
// servers die with the harness through Pdeathsig).
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	workload.MaybeWorker() // a client process of a process_per_client run
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		fmt.Fprintf(os.Stderr, "\n%s: stopping servers and writing partial results (again to quit at once)\n", s)
		cancel(fmt.Errorf("signal %s", s))
		<-sigs
		os.Exit(130)
	}()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	os.Exit(Code(err, os.Stderr))
}

// FlagSet is the flag set of one verb (name: "bench run"): errors and
// usage go to stderr, and its usage is the text (a format with args),
// followed, when the verb has flags, by "Flags:" and their defaults.
func FlagSet(name string, stderr io.Writer, usage string, args ...any) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, usage, args...)
		flags := false
		fs.VisitAll(func(*flag.Flag) { flags = true })
		if flags {
			fmt.Fprint(stderr, "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// Verb runs one verb of a command with the arguments that follow it.
type Verb func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// NoContext is a Verb for a function that takes no context.
func NoContext(f func(args []string, stdout, stderr io.Writer) error) Verb {
	return func(_ context.Context, args []string, stdout, stderr io.Writer) error {
		return f(args, stdout, stderr)
	}
}

// Dispatch runs the verb args[0] of command cmd: run (in mode), validate,
// cleanup, version and help, which every command has, or one of verbs.
// Without a verb, or with one the command lacks, it prints usage and
// returns a UsageError.
func Dispatch(ctx context.Context, cmd, usage string, mode Mode, verbs map[string]Verb, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		io.WriteString(stderr, usage)
		return Usagef("no verb given")
	}
	rest := args[1:]
	switch args[0] {
	case "run":
		return RunCommand(ctx, cmd, rest, stdout, stderr, mode)
	case "validate":
		return Validate(rest, stdout, stderr, cmd)
	case "cleanup":
		return Cleanup(ctx, rest, stdout, stderr, cmd)
	case "version", "--version", "-version":
		return Version(rest, stdout, stderr, cmd)
	case "help", "-h", "--help":
		io.WriteString(stdout, usage)
		return nil
	}
	if v, ok := verbs[args[0]]; ok {
		return v(ctx, rest, stdout, stderr)
	}
	return UnknownVerb(stderr, cmd, usage, args[0])
}

// Code prints err (when it needs printing) and returns the exit code.
func Code(err error, stderr io.Writer) int {
	var ue *UsageError
	var ce *ExitCodeError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitOK
	case errors.As(err, &ce):
		return ce.Code
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, ue.Err)
		return ExitBadInput
	case errors.Is(err, ErrFailed):
		return ExitFailed
	case errors.Is(err, ErrInconclusive):
		return ExitInconclusive
	}
	fmt.Fprintln(stderr, "error:", err)
	return ExitFailed
}

// LoadScenarios resolves every argument (a file or a built-in name) and
// returns them all, or a UsageError listing every problem: nothing starts
// when one file is bad.
func LoadScenarios(args []string) ([]*scenarios.Scenario, error) {
	if len(args) == 0 {
		return nil, Usagef("no scenario given (a .yaml file or a built-in name; see `list`)")
	}
	var out []*scenarios.Scenario
	var errs []string
	for _, a := range args {
		sc, err := scenarios.Resolve(a)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		out = append(out, sc)
	}
	if len(errs) > 0 {
		return nil, &UsageError{Err: errors.New(strings.Join(errs, "\n"))}
	}
	return out, nil
}

// Logger returns the diagnostics logger: warnings and errors to w, or
// debug output too when verbose.
func Logger(w io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// SplitList splits a comma-separated flag value, dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
