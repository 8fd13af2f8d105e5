package external

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// CheckProgram reports, before anything starts, a command that cannot
// run: its first word must resolve as the harness will start it (a path
// when it holds a slash, else through PATH) to an executable file; and
// when that is a script interpreter (python, node, ruby, perl, sh, bash),
// its first argument that is not a flag is the script, which must exist.
// Relative paths are from the current directory, where the harness starts
// the program.
func CheckProgram(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("empty command")
	}
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("program %q: %w", argv[0], unwrapExec(err))
	}
	if !interpreter(argv[0]) {
		return nil
	}
	for i, a := range argv[1:] {
		if a == "-c" || a == "-m" || a == "-e" || a == "--eval" {
			return nil // code on the command line: no script file
		}
		if strings.HasPrefix(a, "-") {
			continue
		}
		if _, err := os.Stat(a); err != nil {
			return fmt.Errorf("script %q (argument %d of %s): no such file", a, i+1, argv[0])
		}
		return nil
	}
	return nil
}

// interpreter reports whether program runs a script named by its first
// non-flag argument.
func interpreter(program string) bool {
	base := filepath.Base(program)
	for _, p := range []string{"python", "node", "ruby", "perl", "sh", "bash"} {
		if base == p || (strings.HasPrefix(base, p) && strings.Trim(base[len(p):], "0123456789.") == "") {
			return true
		}
	}
	return false
}

// unwrapExec drops exec.Error's repetition of the name.
func unwrapExec(err error) error {
	if e, ok := err.(*exec.Error); ok {
		return e.Err
	}
	return err
}
