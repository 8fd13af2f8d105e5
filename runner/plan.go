package runner

import (
	"fmt"
	"os"
	"strings"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/internal/suggest"
	"github.com/locklab/locklab/locks"
	"github.com/locklab/locklab/report"
	"github.com/locklab/locklab/scenarios"
)

// Point is one run of a scenario: a lock at one sweep value.
type Point struct {
	Lock    scenarios.Lock
	Clients int
	Params  map[string]string
	Faults  []scenarios.Fault
	// Cluster is the cluster the point starts (without Dir and Logger):
	// its lock's backend, proxied where Faults may act
	// (faults.ClientProxies).
	Cluster cluster.Spec
	// Plan is Cluster's plan, computed once: Faults were narrowed to it
	// and checked against it, and cluster.StartPlan builds it (faults.Run
	// reads it back from the cluster).
	Plan cluster.Plan
	// Dropped, one per Faults entry, names what a multi-backend fault lost
	// for this lock ("" when nothing); NotApplicable are the faults left
	// with nothing to act on, recorded in the run as such.
	Dropped       []string
	NotApplicable []report.FaultWindow
}

// Plan lists the runs of sc after applying opts, in order.
func Plan(sc *scenarios.Scenario, opts Options) ([]Point, error) {
	lks := sc.Locks
	if len(opts.Locks) > 0 {
		lks = nil
		for _, want := range opts.Locks {
			found := false
			for _, l := range sc.Locks {
				if l.Name == want || l.Label == want {
					lks = append(lks, l)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("--locks: %q is not among the scenario's locks (%s)%s", want, strings.Join(labels(sc.Locks), ", "), suggest.Hint(want, labels(sc.Locks)))
			}
		}
	}
	if providerOf(sc, opts) == cluster.ProviderExternal && sc.Cluster.External == nil {
		return nil, fmt.Errorf("%s: provider external needs cluster.external: {redis: [host:port], zookeeper: [...], etcd: [...]} in the scenario", sc.File)
	}
	// One variant per sweep combination (scenarios.Expand); --clients
	// replaces the clients dimension, so variants differing only in it
	// collapse into one.
	var variants []*scenarios.Scenario
	seen := map[string]bool{}
	for _, v := range sc.Expand() {
		if opts.Clients > 0 {
			v.Workload.Clients = opts.Clients
			delete(v.Params, "clients")
			key := fmt.Sprint(v.Params)
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		variants = append(variants, v)
	}
	var pts []Point
	perClient := processPerClient(sc, opts)
	for _, l := range lks {
		if _, ok := locks.Lookup(l.Name); !ok {
			return nil, fmt.Errorf("%s:%d: locks: %q is not registered", sc.File, l.Line, l.Name)
		}
		spec := lockSpec(l) // exec: its faults narrow to its backend's cluster
		if spec.InProcess && perClient {
			return nil, fmt.Errorf("%s:%d: locks: %s is real only among clients of the harness process: it cannot run with workload.process_per_client or a pause-client fault", sc.File, l.Line, l.Name)
		}
		for _, v := range variants {
			n := v.Workload.Clients
			// The point's plan, every client link proxied: what its faults
			// are narrowed to, checked against and proxied for.
			cs := lockCluster(sc, providerOf(sc, opts), spec.Backend, n)
			if err := cs.CheckBackends(); err != nil {
				return nil, fmt.Errorf("%s:%d: locks: %s: %w", sc.File, l.Line, l.Name, err)
			}
			plan := cluster.PlanOf(cs)
			fs, dropped, na := relevantFaults(v.Faults, plan)
			cs.ClientProxies = faults.ClientProxies(plan, perClient, fs)
			cs.LossyDisks = faults.NeedsLossyDisks(fs) // power-cut: data dirs on lossyfs
			if err := checkFaults(sc, label(l), plan, perClient, fs); err != nil {
				return nil, err
			}
			plan = plan.WithClientProxies(cs.ClientProxies)
			var params map[string]string
			if len(v.Params) > 0 {
				params = v.Params
			}
			pts = append(pts, Point{Lock: l, Clients: n, Params: params, Faults: fs, Dropped: dropped, NotApplicable: na, Cluster: cs, Plan: plan})
		}
	}
	return pts, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// processPerClient reports whether the clients of sc run as processes of
// their own: as the workload says, or under a provider whose links are
// packet paths (netns) when a fault singles out one client (each client
// process then has its own network namespace and address, which packet
// rules can tell apart).
func processPerClient(sc *scenarios.Scenario, opts Options) bool {
	t, _ := cluster.TraitsOf(providerOf(sc, opts))
	return sc.Workload.ProcessPerClient || (t.PacketLinks && faults.SinglesOutClient(sc.Faults))
}

func providerOf(sc *scenarios.Scenario, opts Options) string {
	switch {
	case opts.Provider != "":
		return opts.Provider
	case sc.Cluster.Provider != "":
		return sc.Cluster.Provider
	}
	return cluster.ProviderLocal
}

func labels(ls []scenarios.Lock) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = label(l)
	}
	return out
}

func label(l scenarios.Lock) string {
	if l.Label != "" {
		return l.Label
	}
	return l.Name
}
