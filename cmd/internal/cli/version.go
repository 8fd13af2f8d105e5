package cli

import (
	"fmt"
	"io"

	"github.com/locklab/locklab/internal/version"
)

// Version is the `version` verb (and --version) of bench and chaos: the
// command's name, the module version and the commit it was built from
// (+dirty for uncommitted changes), the commit time and the Go version.
func Version(args []string, stdout, stderr io.Writer, cmd string) error {
	fs := FlagSet(cmd+" version", stderr, "Usage: %s version (or %s --version)\n\n"+
		"Prints the module version and the commit this binary was built from (+dirty when\n"+
		"the tree had uncommitted changes); result.json records the same as its version.\n", cmd, cmd)
	pos, err := ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return Usagef("%s version takes no arguments (got %q)", cmd, pos)
	}
	_, err = fmt.Fprintf(stdout, "%s %s\n", cmd, version.Get())
	return err
}
