package recheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZombieHistories judges the checker's hand-written histories of
// lost leases (checker/testdata/zombies) by this package's own reading of
// docs/verdicts.md ("Zombie time"); the expected figures are restated
// here, not shared.
func TestZombieHistories(t *testing.T) {
	const ms = int64(1_000_000)
	for _, c := range []struct {
		file string
		want Zombie
	}{
		{"paused-told.jsonl", Zombie{1, 150 * ms, 150 * ms}},
		{"fault-untold.jsonl", Zombie{1, 180 * ms, 180 * ms}},
		{"none.jsonl", Zombie{}},
		{"four.jsonl", Zombie{4, 125 * ms, 300 * ms}},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "checker", "testdata", "zombies", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			zs, err := Zombies(f)
			if err != nil {
				t.Fatal(err)
			}
			if got := zs[0]; got != c.want {
				t.Errorf("%+v, want %+v", got, c.want)
			}
		})
	}
}

// TestZombieRule: one visit per line of the rule, as history lines.
func TestZombieRule(t *testing.T) {
	const (
		acq   = `{"run":0,"seq":1,"client":0,"lock":"k","op":"acquire","visit":1,"invoke_ns":0,"return_ns":0,"valid_until_ns":%d,"outcome":"ok"}`
		enter = `{"run":0,"seq":2,"client":0,"lock":"k","op":"enter","visit":1,"invoke_ns":0,"return_ns":0,"outcome":"ok"}`
		exit  = `{"run":0,"seq":3,"client":0,"lock":"k","op":"exit","visit":1,"invoke_ns":300,"return_ns":300,"outcome":"ok"}`
		lost  = `{"run":0,"seq":4,"client":0,"lock":"k","op":"lost","visit":1,"invoke_ns":%d,"return_ns":%[1]d,"outcome":"lost_while_held"}`
		fault = `{"run":0,"seq":5,"client":%d,"lock":"","op":"fault","invoke_ns":%d,"return_ns":%[2]d,"outcome":"ok","fault":{"index":0,"type":"restart","lost_at_ns":%d}}`
	)
	line := fmt.Sprintf
	for _, c := range []struct {
		name  string
		lines []string
		want  Zombie
	}{
		{"inside its promise", []string{line(acq, 500), enter, exit}, Zombie{}},
		{"past its promise, never told", []string{line(acq, 100), enter, exit}, Zombie{1, 200, 200}},
		{"past its promise, told", []string{line(acq, 100), enter, exit, line(lost, 180)}, Zombie{1, 80, 80}},
		{"told before the loss", []string{line(acq, 100), enter, exit, line(lost, 50)}, Zombie{1, 0, 0}},
		{"told after it left", []string{line(acq, 100), enter, exit, line(lost, 350)}, Zombie{1, 200, 200}},
		{"state lost inside", []string{line(acq, 1000), enter, exit, line(fault, -1, 50, 120)}, Zombie{1, 180, 180}},
		{"state lost after it left", []string{line(acq, 1000), enter, exit, line(fault, -1, 50, 320)}, Zombie{}},
		{"fault aimed at another client", []string{line(acq, 1000), enter, exit, line(fault, 1, 50, 120)}, Zombie{}},
		{"still inside at the end", []string{line(acq, 100), enter, line(fault, -1, 400, 400)}, Zombie{1, 300, 300}},
	} {
		t.Run(c.name, func(t *testing.T) {
			zs, err := Zombies(strings.NewReader(strings.Join(c.lines, "\n") + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := zs[0]; got != c.want {
				t.Errorf("%+v, want %+v", got, c.want)
			}
		})
	}
}
