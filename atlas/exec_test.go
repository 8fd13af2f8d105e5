package atlas

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locklab/locklab/clients"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/testenv"
)

// TestExecPlan: an --exec program gets a cell in every family, with its
// exec entry in the scenario, families of other backends not applicable;
// it survives SavePlan/LoadPlan (--resume, merge).
func TestExecPlan(t *testing.T) {
	e, err := ParseExec("mine=python3 my client.py", "zookeeper")
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "mine" || strings.Join(e.Command, "|") != "python3|my|client.py" {
		t.Fatalf("ParseExec: %+v", e)
	}
	p, err := NewPlan(Config{Runs: 1, Locks: []string{"mine"}, Exec: []ExecLock{e}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Locks) != 1 || len(p.Cells) != len(Families()) {
		t.Fatalf("locks %v, %d cells", p.Locks, len(p.Cells))
	}
	for _, c := range p.Cells {
		switch c.Family {
		case "baseline", "pause-holder-long", "kill-leader":
			if c.NotApplicable != "" {
				t.Errorf("%s: %s", c.Key(), c.NotApplicable)
				continue
			}
			l := c.Scenario.Locks[0]
			if l.Name != "exec" || l.Label != "mine" || l.Options["backend"] != "zookeeper" || l.Options["command"] != `["python3","my","client.py"]` {
				t.Errorf("%s: lock entry %+v", c.Key(), l)
			}
		case "power-cut-everysec", "restart-empty", "kill-1-of-3":
			if c.NotApplicable == "" {
				t.Errorf("%s applies to a ZooKeeper program", c.Key())
			}
		}
	}
	dir := t.TempDir()
	if err := SavePlan(p, dir); err != nil {
		t.Fatal(err)
	}
	q, err := LoadPlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !SamePlan(p, q) || len(q.Config.Exec) != 1 {
		t.Errorf("the plan of %s is not the one saved", dir)
	}
	all, err := NewPlan(Config{Runs: 1, Exec: []ExecLock{e}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(all.Locks); n != len(Locks())+1 || all.Locks[n-1] != "mine" {
		t.Errorf("without --locks: %v, want every lock and mine", all.Locks)
	}
	for _, bad := range []struct {
		cfg  Config
		want string
	}{
		{Config{Locks: []string{"exec"}}, "--exec NAME="},
		{Config{Exec: []ExecLock{{Name: "redis-py", Backend: "redis", Command: []string{"x"}}}}, "the name of a registered lock"},
		{Config{Exec: []ExecLock{e, e}}, "given twice"},
	} {
		if _, err := NewPlan(bad.cfg); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("NewPlan(%+v): %v, want %q", bad.cfg, err, bad.want)
		}
	}
	for _, s := range []string{"mine", "=python3", "mine=", "my lock=python3"} {
		if _, err := ParseExec(s, "redis"); err == nil {
			t.Errorf("ParseExec(%q) accepted", s)
		}
	}
	if _, err := ParseExec("mine=python3", "mysql"); err == nil || !strings.Contains(err.Error(), "--backend") {
		t.Errorf("backend mysql: %v", err)
	}
}

// TestExecAtlasRun: the starter Redis client of bench init --exec, run by
// the atlas in the baseline, pause-holder-long and restart-empty families:
// real runs, complete results, cells judged, and a server fault acting on
// the program's cluster (not dropped as naming servers it lacks).
func TestExecAtlasRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts servers and client programs")
	}
	testenv.RequireBinaries(t, "redis-server", "/usr/bin/python3")
	src := t.TempDir()
	for from, to := range map[string]string{"python/starter_redis.py": "mine_client.py", "python/locklab_client.py": "locklab_client.py"} {
		b, err := clients.Files.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e, err := ParseExec("mine="+external.Python()+" "+filepath.Join(src, "mine_client.py"), "redis")
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPlan(Config{Runs: 1, Locks: []string{"mine"}, Families: []string{"baseline", "pause-holder-long", "restart-empty"}, Exec: []ExecLock{e}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteScenarios(p, dir); err != nil {
		t.Fatal(err)
	}
	if n, err := Execute(context.Background(), p.Jobs, RunOptions{Dir: dir, Parallel: 2}); err != nil || n != 3 {
		t.Fatalf("Execute: %d runs, %v", n, err)
	}
	a := Build(p, []string{dir}, dir)
	if a.Missing != 0 {
		t.Fatalf("%d runs missing", a.Missing)
	}
	base, pause := a.Cell("mine", "baseline"), a.Cell("mine", "pause-holder-long")
	t.Logf("baseline %s %+v; pause-holder-long %s %+v", base.Verdict, base.RunList, pause.Verdict, pause.RunList)
	if base.Verdict != Safe || base.RunList[0].Ops == 0 {
		t.Errorf("baseline: %s, ops %d: want safe with work done", base.Verdict, base.RunList[0].Ops)
	}
	if pause.RunList[0].Error != "" || pause.RunList[0].Ops == 0 {
		t.Errorf("pause-holder-long: error %q, ops %d", pause.RunList[0].Error, pause.RunList[0].Ops)
	}
	if pause.LockFaults != 0 {
		t.Errorf("pause-holder-long: %d lock faults: the holder's promise (validity_ms) ran out before the second grant", pause.LockFaults)
	}
	if r := a.Cell("mine", "restart-empty").RunList[0]; strings.Contains(r.FaultNotes, "not applicable") || strings.Contains(r.Reason, "did not apply") {
		t.Errorf("restart-empty: the restart of redis-0 did not act on the program's cluster: %s %s", r.FaultNotes, r.Reason)
	}
	if pause.StaleAccepted != 0 || pause.LostUpdates != 0 {
		t.Errorf("pause-holder-long: stale accepted %d, lost updates %d: the starter client's INCR token fences", pause.StaleAccepted, pause.LostUpdates)
	}
}
