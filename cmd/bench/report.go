package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/report"
)

// reportCmd is `bench report [--out DIR] DIR...`: with one results folder
// it re-renders its plots, report.md and report.html from result.json
// (into --out when given, else in place); with several it compares them,
// like with like (a result only against the first result of the same
// scenario; different scenarios lock by lock): tables on stdout, and comparison.md,
// comparison.html and plots in --out (default results/compare-<time>/).
func reportCmd(args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("bench report", stderr, "Usage: bench report [flags] DIR...\n\n"+
		"DIR is a results folder (or its result.json). One DIR: re-render its plots,\n"+
		"report.md and report.html. Several: compare them, a result only with the first\n"+
		"result of the same scenario; different scenarios side by side, lock by lock.\n")
	out := fs.String("out", "", "write the report or comparison into this folder")
	root := fs.String("results", "results", "root folder for the default compare-<time>/ folder")
	dirs, err := cli.ParseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) == 0 {
		fs.Usage()
		return cli.Usagef("bench report: no results folder given")
	}
	results := make([]*report.Result, len(dirs))
	names := make([]string, len(dirs))
	for i, d := range dirs {
		r, err := report.Read(d)
		if err != nil {
			return err
		}
		if st, err := os.Stat(d); err == nil && !st.IsDir() {
			d = filepath.Dir(d)
		}
		dirs[i] = d
		results[i] = r
		names[i] = filepath.Base(filepath.Clean(d))
	}
	if len(results) == 1 {
		dir := dirs[0]
		if *out != "" {
			dir = *out
		}
		err := report.Render(dir, results[0])
		report.Table(stdout, results[0])
		fmt.Fprintf(stdout, "\nreport: %s\n", filepath.Join(dir, "report.html"))
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join(*root, "compare-"+time.Now().Format("20060102-150405"))
	}
	c := report.Compare(results, names)
	if err := c.WriteTable(stdout); err != nil {
		return err
	}
	err = report.RenderComparison(dir, c)
	fmt.Fprintf(stdout, "\ncomparison: %s\n", filepath.Join(dir, "comparison.html"))
	return err
}
