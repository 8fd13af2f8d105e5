package cli

import (
	"errors"
	"flag"
	"strings"
)

// ParseFlags parses args with fs, flags and positional arguments in any
// order (`run redis-baseline --duration 5s` as `run --duration 5s
// redis-baseline`), and returns the positional arguments in order. A `--`
// in a flag's place ends the flags: everything after it is positional, as
// given (`client-check -- CMD --its-own-flag`); a `--` that is a flag's
// value (`--out --`) is that value.
//
// It calls fs.Parse until the arguments run out: the flag package stops at
// the first non-flag argument, which is kept, and parsing goes on after it.
// A bad flag is returned as a *UsageError (exit 2) after fs has printed
// its usage; -h or --help returns flag.ErrHelp unwrapped. Afterwards
// fs.Args() and fs.NArg() give the same positional arguments, so code
// written for fs.Parse keeps working.
func ParseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	// Leave them in fs.Args(): "--" ends the flags at once.
	if err := fs.Parse(append([]string{"--"}, pos...)); err != nil {
		return nil, &UsageError{Err: err}
	}
	return pos, nil
}

func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	pos := []string{}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &UsageError{Err: err}
		}
		rest := fs.Args()
		if endedByDashes(fs, args[:len(args)-len(rest)]) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// endedByDashes reports whether the flag package stopped parsing because
// of a `--` terminator: consumed, the arguments one fs.Parse read, are
// flags and their values only, so walking them flag by flag tells a
// terminator from a flag's value that happens to be "--".
func endedByDashes(fs *flag.FlagSet, consumed []string) bool {
	for i := 0; i < len(consumed); i++ {
		a := consumed[i]
		if a == "--" {
			return true
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		f := fs.Lookup(name)
		if f == nil {
			continue
		}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			continue
		}
		i++ // the next argument is this flag's value
	}
	return false
}
