package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/locklab/locklab/cmd/internal/cli"
)

// TestExploreBadInput: flags explore cannot act on exit 2 with a message
// naming the flag, and start nothing.
func TestExploreBadInput(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--faults", "latency,bogus"}, `--faults: "bogus"`},
		{[]string{"--locks", "mem"}, "calibration lock"},
		{[]string{"--locks", "nope"}, `"nope" is not a registered lock`},
		{[]string{"--budget", "1m", "--runs", "3"}, "--budget or --runs"},
		{[]string{"--shard", "3/2"}, "--shard"},
		{[]string{"--resume", dir}, "--resume"},
		{[]string{"merge"}, "no folder"},
		{[]string{"merge", dir}, "explore.json"},
	} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"explore", "--out", dir}, tt.args...)
		if tt.args[0] == "merge" {
			args = append([]string{"explore"}, tt.args...)
		}
		err := run(context.Background(), args, &stdout, &stderr)
		if code := cli.Code(err, &stderr); code != cli.ExitBadInput {
			t.Errorf("%v: exit %d, want %d\n%s", tt.args, code, cli.ExitBadInput, stderr.String())
		}
		if !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: stderr does not say %q:\n%s", tt.args, tt.want, stderr.String())
		}
	}
}
