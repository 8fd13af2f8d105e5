package runner

import (
	"errors"
	"fmt"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// nodeBackend names the backend a node name belongs to ("" for clients,
// holder and anything else that is not a server).
func nodeBackend(name string) string {
	switch {
	case strings.HasPrefix(name, "redis-"), strings.HasPrefix(name, "sentinel-"):
		return "redis"
	case strings.HasPrefix(name, "zk-"):
		return "zookeeper"
	case strings.HasPrefix(name, "etcd-"):
		return "etcd"
	}
	return ""
}

// faultNames lists every name a fault mentions.
func faultNames(f scenarios.Fault) []string {
	names := []string{f.Node, f.Isolate}
	if f.Link != "" {
		a, b, _ := strings.Cut(f.Link, "->")
		names = append(names, a, b)
	}
	for _, g := range f.Groups {
		names = append(names, g...)
	}
	return names
}

// relevant reports whether fault f acts on the cluster of spec. Each lock
// runs on a fresh cluster of its own backend only, so in a scenario that
// compares Redis and ZooKeeper locks a fault on zk-0 does not apply to the
// Redis locks' runs. A fault naming no server (pause-client, clients links
// by holder only) applies everywhere.
func relevant(f scenarios.Fault, spec cluster.Spec) bool {
	present := map[string]bool{
		"redis":     spec.Redis != nil,
		"zookeeper": spec.ZooKeeper != nil,
		"etcd":      spec.Etcd != nil,
	}
	named := false
	for _, n := range faultNames(f) {
		b := nodeBackend(n)
		if b == "" {
			continue
		}
		named = true
		if present[b] {
			return true
		}
	}
	return !named
}

// relevantFaults keeps the faults of fs that act on spec's cluster.
func relevantFaults(fs []scenarios.Fault, spec cluster.Spec) []scenarios.Fault {
	var out []scenarios.Fault
	for _, f := range fs {
		if relevant(f, spec) {
			out = append(out, f)
		}
	}
	return out
}

// checkFaults runs faults.Check for one point and turns its errors into
// file:line messages.
func checkFaults(sc *scenarios.Scenario, lock string, spec cluster.Spec, ppc bool, fs []scenarios.Fault) error {
	err := faults.Check(spec, ppc, fs)
	if err == nil {
		return nil
	}
	var lines []string
	for _, e := range unjoin(err) {
		var fe *faults.FaultError
		if errors.As(e, &fe) && fe.Index < len(fs) {
			lines = append(lines, fmt.Sprintf("%s:%d: faults: %s (with lock %s): %v", sc.File, fs[fe.Index].Line, fe.Type, lock, fe.Err))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: faults: %v", sc.File, e))
	}
	return errors.New(strings.Join(lines, "\n"))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
