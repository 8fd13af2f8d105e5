package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/cmd/internal/cli"
	"github.com/locklab/locklab/testenv"
)

// TestAtlasCommand: bad flags exit 2 before anything runs; two shards of a
// one-cell atlas merge into a complete atlas whose baseline reads safe; a
// folder of another plan (or provider) is refused unless resumed; an
// atlas compared with itself has one row and no difference.
func TestAtlasCommand(t *testing.T) {
	for _, args := range [][]string{
		{"atlas", "--shard", "3/2"},
		{"atlas", "--families", "no-such-family"},
		{"atlas", "--locks", "no-such-lock"},
		{"atlas", "merge"},
		{"atlas", "--provider", "docker"},
		{"atlas", "compare", "only-one-folder"},
	} {
		var stdout, stderr bytes.Buffer
		if code := cli.Code(run(context.Background(), args, &stdout, &stderr), &stderr); code != cli.ExitBadInput {
			t.Errorf("%v: exit %d, want %d", args, code, cli.ExitBadInput)
		}
	}
	testenv.RequireBinaries(t, "redis-server")
	dir := t.TempDir()
	common := []string{"atlas", "-q", "--runs", "1", "--ttl", "300ms", "--locks", "redis-cad", "--families", "baseline"}
	for _, shard := range []string{"1/2", "2/2"} {
		var stdout, stderr bytes.Buffer
		out := filepath.Join(dir, strings.ReplaceAll(shard, "/", "-"))
		if err := run(context.Background(), append(common, "--shard", shard, "--out", out), &stdout, &stderr); err != nil {
			t.Fatalf("shard %s: %v\n%s", shard, err, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	merged := filepath.Join(dir, "merged")
	if err := run(context.Background(), []string{"atlas", "merge", "--out", merged, filepath.Join(dir, "1-2"), filepath.Join(dir, "2-2")}, &stdout, &stderr); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	a, err := atlas.Read(merged)
	if err != nil {
		t.Fatal(err)
	}
	if c := a.Cell("redis-cad", "baseline"); !a.Complete || c == nil || c.Verdict != atlas.Safe || c.Runs != 1 {
		t.Fatalf("merged atlas: complete %v, cell %+v", a.Complete, c)
	}
	other := []string{"atlas", "-q", "--runs", "2", "--ttl", "300ms", "--locks", "redis-cad", "--families", "baseline", "--out", filepath.Join(dir, "1-2")}
	if code := cli.Code(run(context.Background(), other, &stdout, &stderr), &stderr); code != cli.ExitBadInput {
		t.Errorf("atlas of another plan into an existing folder: exit %d, want %d", code, cli.ExitBadInput)
	}
	// The same plan on another provider is another plan.
	netns := append(common[:len(common):len(common)], "--provider", "netns", "--out", merged)
	if code := cli.Code(run(context.Background(), netns, &stdout, &stderr), &stderr); code != cli.ExitBadInput {
		t.Errorf("netns atlas into a local atlas's folder: exit %d, want %d", code, cli.ExitBadInput)
	}
	cmp := filepath.Join(dir, "compare")
	stdout.Reset()
	if err := run(context.Background(), []string{"atlas", "compare", "--out", cmp, merged, merged}, &stdout, &stderr); err != nil {
		t.Fatalf("compare: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "1 cells in both atlases, 0 with different verdicts") {
		t.Errorf("compare of an atlas with itself: %s", stdout.String())
	}
}
