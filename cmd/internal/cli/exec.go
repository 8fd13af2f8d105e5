package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/locks/external"
	"github.com/locklab/locklab/scenarios"
)

// ExecFlags are --exec NAME='CMD ARGS' (repeatable) and --backend: programs
// of the user's (client protocol), each judged as lock NAME.
type ExecFlags struct {
	Exec    []string
	Backend string
}

func (f *ExecFlags) register(fs *flag.FlagSet, what string) {
	fs.Func("exec", "NAME='CMD ARGS': "+what+" (repeatable)", func(s string) error {
		f.Exec = append(f.Exec, s)
		return nil
	})
	fs.StringVar(&f.Backend, "backend", "", "the servers the --exec programs use: "+locks.ServerBackendList())
}

// locks reads the --exec values on --backend.
func (f ExecFlags) locks() ([]atlas.ExecLock, error) {
	if len(f.Exec) == 0 {
		if f.Backend != "" {
			return nil, errors.New("--backend names the servers of --exec programs: give --exec NAME='CMD ARGS' too")
		}
		return nil, nil
	}
	if f.Backend == "" {
		return nil, fmt.Errorf("--exec needs --backend %s: the servers the program uses", locks.ServerBackendList())
	}
	var out []atlas.ExecLock
	for _, s := range f.Exec {
		e, err := atlas.ParseExec(s, f.Backend)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// replaceLocks puts the programs in place of sc's locks, so any scenario
// (a built-in one included) judges the user's lock under its cluster,
// workload and faults: each program an exec entry labelled with its name,
// on the workload's TTL. Expectations the scenario wrote for its own
// locks by name no longer apply; its "default" entry does, and a scenario
// without one judges the programs by the claim every lock makes,
// lock_faults: 0 (never a second holder within the first one's promise),
// so a run is never met without a claim checked. The cluster gains the
// program's backend if it lacks it, as for any lock.
func replaceLocks(sc *scenarios.Scenario, execs []atlas.ExecLock) {
	if len(execs) == 0 {
		return
	}
	if _, ok := sc.Expect["default"]; !ok {
		if sc.Expect == nil {
			sc.Expect = map[string]scenarios.Expect{}
		}
		sc.Expect["default"] = scenarios.Expect{LockFaults: "0"}
	}
	line := 0
	if len(sc.Locks) > 0 {
		line = sc.Locks[0].Line
	}
	sc.Locks = nil
	for _, e := range execs {
		argv, _ := json.Marshal(e.Command)
		sc.Locks = append(sc.Locks, scenarios.Lock{Name: external.Exec, TTL: sc.Workload.TTL, Label: e.Name, Line: line,
			Options: map[string]string{"backend": e.Backend, "command": string(argv)}})
	}
}

// checkPrograms reports, as bad input, an exec lock of sc whose program
// cannot start (external.CheckProgram), naming the scenario's file and
// line: a run must not start servers, nor make a results folder, for a
// program that is not there.
func checkPrograms(sc *scenarios.Scenario) error {
	for i, l := range sc.Locks {
		if l.Name != external.Exec {
			continue
		}
		argv, err := external.ParseCommand(l.Options["command"])
		if err == nil {
			err = external.CheckProgram(argv)
		}
		if err != nil {
			return Usagef("%s:%d: locks[%d] (%s): command: %v", sc.File, l.Line, i, orName(l.Label, l.Name), err)
		}
	}
	return nil
}

func orName(label, name string) string {
	if label != "" {
		return label
	}
	return name
}

// checkExecs reports, as bad input, an --exec program that cannot start.
func checkExecs(execs []atlas.ExecLock) error {
	for _, e := range execs {
		if err := external.CheckProgram(e.Command); err != nil {
			return Usagef("--exec %s: %v", e.Name, err)
		}
	}
	return nil
}
