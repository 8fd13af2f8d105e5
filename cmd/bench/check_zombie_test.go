package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/report"
)

// TestCheckZombies: bench check recomputes a run's lost leases and zombie
// times (checker/testdata/zombies/paused-told.jsonl: one holder paused
// past its promise, told 150 ms later) by the replay and the re-check,
// agrees with a result.json that states them, exits 1 naming the figure
// and result.json when one is edited or dropped, and reads a result
// written before they were measured (none of the fields) as not measured.
func TestCheckZombies(t *testing.T) {
	history, err := os.ReadFile(filepath.Join("..", "..", "checker", "testdata", "zombies", "paused-told.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	intp := func(n int) *int { return &n }
	msp := func(x float64) *float64 { return &x }
	for _, c := range []struct {
		name          string
		lost          *int
		p50, longest  *float64
		disagree      string // the figure named; "": agrees
		zombieFigures bool
	}{
		{"as measured", intp(1), msp(150), msp(150), "", true},
		{"p50 edited", intp(1), msp(100), msp(150), "zombie_ms_p50", true},
		{"max dropped", intp(1), msp(150), nil, "zombie_ms_max", true},
		{"no lost lease claimed", intp(0), nil, nil, "lost_leases", true},
		{"written before the figures", nil, nil, nil, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			res := &report.Result{Schema: report.Schema, Scenario: "zombie", Fencing: "off", Complete: true,
				Runs: []report.Run{{Lock: "test", LockName: "test", Visits: 2, TokenOrder: "ok", Complete: true,
					LostLeases: c.lost, ZombieMsP50: c.p50, ZombieMsMax: c.longest}}}
			if err := report.Write(dir, res); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "history.jsonl"), history, 0o644); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := cli.Code(run(context.Background(), []string{"check", dir}, &stdout, &stderr), &stderr)
			out := stdout.String()
			if got := strings.Contains(out, "zombie_ms_max"); got != c.zombieFigures {
				t.Errorf("zombie figures shown: %v, want %v\n%s", got, c.zombieFigures, out)
			}
			if c.disagree == "" {
				if code != 0 {
					t.Fatalf("exit %d, want 0\n%s%s", code, out, stderr.String())
				}
				return
			}
			if code != cli.ExitFailed {
				t.Fatalf("exit %d, want 1\n%s%s", code, out, stderr.String())
			}
			named := false
			for _, l := range strings.Split(out, "\n") {
				named = named || strings.Contains(l, c.disagree) && strings.Contains(l, "DISAGREE: result.json")
			}
			if !named {
				t.Errorf("no line names %s with result.json the odd one out:\n%s", c.disagree, out)
			}
		})
	}
}
