package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/locklab/locklab/internal/suggest"
	"github.com/locklab/locklab/runner"
	"github.com/locklab/locklab/scenarios"
)

// Validate is the `validate` verb of bench and chaos: everything run does
// before it starts a server (scenarios.Resolve, then runner.Plan with the
// same --provider, --locks, --clients and --duration), for every argument,
// starting nothing. It prints "ok FILE (N locks, M faults)" per valid
// scenario on stdout and every problem (file:line: field: ...) on stderr,
// and returns a UsageError (exit 2, as run) when any is bad.
func Validate(args []string, stdout, stderr io.Writer, cmd string) error {
	fs := FlagSet(cmd+" validate", stderr, "Usage: %s validate [flags] SCENARIO...\n\n"+
		"Checks each scenario (a .yaml file or a built-in name) as `%s run` would before\n"+
		"starting anything, with the same overrides, and starts nothing. Prints\n"+
		"\"ok FILE (N locks, M faults)\" per valid file; each problem as file:line: field: ...\n"+
		"Exit 0 when all are valid, 2 when any is not.\n", cmd, cmd)
	var f PlanFlags
	f.register(fs)
	pos, err := ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return Usagef("%s validate: no scenario given (a .yaml file or a built-in name; see `%s list`)", cmd, cmd)
	}
	opts, err := f.options()
	if err != nil {
		return err
	}
	bad := 0
	for _, a := range pos {
		sc, err := scenarios.Resolve(a)
		if err == nil {
			replaceLocks(sc, f.execs)
			var pts []runner.Point
			if pts, err = runner.Plan(sc, opts); err == nil {
				fmt.Fprintf(stdout, "ok %s (%d locks, %d faults)\n", a, countLocks(pts), len(sc.Faults))
				continue
			}
			err = planError(sc, err)
		}
		bad++
		fmt.Fprintln(stderr, err)
	}
	if bad > 0 {
		return Usagef("%d of %d scenarios invalid", bad, len(pos))
	}
	return nil
}

// countLocks counts the distinct locks (by label) a plan runs.
func countLocks(pts []runner.Point) int {
	seen := map[string]bool{}
	for _, p := range pts {
		l := p.Lock.Label
		if l == "" {
			l = p.Lock.Name
		}
		seen[l] = true
	}
	return len(seen)
}

// Show is `bench show SCENARIO`: the built-in scenario's YAML exactly as
// embedded, comments included, to start a scenario file from.
func Show(args []string, stdout, stderr io.Writer, cmd string) error {
	fs := FlagSet(cmd+" show", stderr, "Usage: %s show SCENARIO\n\n"+
		"Prints a built-in scenario's YAML as embedded, to start your own from:\n"+
		"  %s show redis-baseline > my.yaml\n"+
		"Built-in: %s.\n", cmd, cmd, strings.Join(scenarios.BuiltinNames(), ", "))
	pos, err := ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return Usagef("%s show: give one built-in scenario name", cmd)
	}
	name := strings.TrimSuffix(strings.TrimSuffix(pos[0], ".yaml"), ".yml")
	data, ok := scenarios.BuiltinYAML(name)
	if !ok {
		names := scenarios.BuiltinNames()
		return Usagef("%s show: no built-in scenario %q%s (built-in: %s)", cmd, pos[0],
			suggest.Hint(name, names), strings.Join(names, ", "))
	}
	_, err = stdout.Write(data)
	return err
}

// UnknownVerb prints usage to stderr and returns the UsageError for a verb
// the command does not have, with a "did you mean" among the verbs usage
// lists (the words after "  CMD " at the start of its lines).
func UnknownVerb(stderr io.Writer, cmd, usage, verb string) error {
	io.WriteString(stderr, usage)
	var verbs []string
	for _, line := range strings.Split(usage, "\n") {
		if rest, ok := strings.CutPrefix(line, "  "+cmd+" "); ok {
			if f := strings.Fields(strings.ReplaceAll(rest, ",", " ")); len(f) > 0 && !strings.HasPrefix(f[0], "-") && !slices.Contains(verbs, f[0]) {
				verbs = append(verbs, f[0])
			}
		}
	}
	return Usagef("unknown verb %q%s", verb, suggest.Hint(verb, verbs))
}
