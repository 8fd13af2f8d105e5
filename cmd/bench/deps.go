package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/cluster/providers/docker"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/images"
)

// depsCmd is `bench deps [--missing | --images]`: the Debian packages of
// the servers the local provider runs, one row of the backend table each,
// and whether each is installed here; `make deps` installs what
// --missing prints, and `make images` builds the images --images lists,
// so neither names a backend itself.
func depsCmd(args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("bench deps", stderr, "Usage: bench deps [--missing | --images]\n\n"+
		"The Debian packages of every server locklab runs (a row of its backend table\n"+
		"each) and whether each is installed on this machine.\n")
	missing := fs.Bool("missing", false, "print only the packages of servers not installed, space-separated (what `make deps` installs)")
	imgs := fs.Bool("images", false, "print the images `make images` builds, a line each: name version-package port command package...")
	rest, err := cli.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 || *missing && *imgs {
		fs.Usage()
		return cli.Usagef("bench deps: takes --missing or --images, no arguments")
	}
	rows := cluster.Backends()
	switch {
	case *imgs:
		_, err := io.WriteString(stdout, images.Env(docker.ImageBackends()))
		return err
	case *missing:
		var pkgs []string
		for _, b := range rows {
			if len(b.Missing()) > 0 {
				for _, p := range b.Packages {
					if !slices.Contains(pkgs, p) {
						pkgs = append(pkgs, p)
					}
				}
			}
		}
		if len(pkgs) > 0 {
			fmt.Fprintln(stdout, strings.Join(pkgs, " "))
		}
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BACKEND\tDEBIAN PACKAGES\tINSTALLED")
	for _, b := range rows {
		state := "yes"
		if m := b.Missing(); len(m) > 0 {
			state = "no: " + strings.Join(m, ", ") + " not found"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", b.Name, strings.Join(b.Packages, " "), state)
	}
	return w.Flush()
}
