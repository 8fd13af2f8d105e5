package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/scenarios"
)

// List prints the built-in scenarios and the registered locks.
func List(args []string, stdout, stderr io.Writer, cmd string) error {
	fs := FlagSet(cmd+" list", stderr, "Usage: %s list\n\nPrints the built-in scenarios, every registered lock (backend, whether it fences, one line) and the backend table (providers, server faults).\n", cmd)
	if _, err := ParseFlags(fs, args); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCENARIOS\t\t")
	for _, sc := range scenarios.Builtin() {
		kind := "bench"
		if len(sc.Faults) > 0 && sc.Sweep == nil {
			kind = "chaos"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", sc.Name, kind, firstSentence(sc.Description))
	}
	fmt.Fprintln(tw, "\t\t")
	fmt.Fprintln(tw, "LOCKS\tbackend\tfencing\tlease\tsummary")
	for _, s := range locks.All() {
		fence, lease := "-", "-"
		if s.Fencing {
			fence = "yes"
		}
		if s.LeaseBased {
			lease = "yes"
		}
		sum := s.Summary
		if s.Broken {
			sum = "[broken by design] " + sum
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", s.Name, s.Backend, fence, lease, sum)
	}
	fmt.Fprintln(tw, "\t\t")
	fmt.Fprintln(tw, "BACKENDS\tproviders\tserver faults\t\tsection")
	for _, b := range cluster.Backends() {
		fs := slices.Clip(b.Faults)
		for _, k := range b.Kinds {
			for _, f := range k.Faults {
				fs = append(fs, f+" ("+k.Pattern+")")
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t\t%s\n", b.Name, strings.Join(append(slices.Clip(b.Providers), cluster.ProviderExternal), ","),
			strings.Join(fs, ","), b.Doc)
	}
	return tw.Flush()
}

// firstSentence shortens a description to its first sentence (or 100
// characters) for one-line listings.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		s = s[:i+1]
	}
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
