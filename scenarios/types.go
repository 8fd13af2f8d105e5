package scenarios

import (
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
)

// Scenario is one parsed and validated scenario file (docs/scenario-file.md).
// Durations are already parsed; defaults already applied.
type Scenario struct {
	Name        string
	Description string
	// References are where the failure the scenario reproduces was
	// reported (URLs or citations); built-in known-<slug> scenarios have
	// them.
	References []string
	Seed       int64
	Cluster    Cluster
	Locks      []Lock
	Workload   Workload
	Sweep      *Sweep
	Faults     []Fault
	Resource   Resource
	// Expect maps a lock name (or "default") to its expectations.
	Expect map[string]Expect
	// File is where the scenario came from ("scenarios/redis-baseline.yaml"
	// or "builtin:redis-baseline"), for messages.
	File string
	// Variant names the sweep values applied to this copy by Expand
	// ("clients=4 faults[0].for=5s"); "" for a scenario as parsed.
	Variant string
	// Params are the same sweep values by name ("clients", "faults[0].for");
	// nil without a sweep.
	Params map[string]string
}

// Cluster is the cluster section, decoded straight into the cluster
// package's Spec: Provider and the backend sections (Redis, ZooKeeper,
// Etcd, External). The run fills Clients, Dir and the rest (ClusterSpec).
type Cluster = cluster.Spec

// Lock is one entry of locks: a name plus per-lock overrides.
type Lock struct {
	Name string
	// TTL is the lease length. Parse sets it to workload.ttl when the entry
	// has none; 0 in a hand-built Lock also means workload.ttl.
	TTL   time.Duration
	Retry time.Duration // 0: the lock's default
	Key   string        // lock name prefix override; "" = default
	// Label distinguishes two entries of the same lock with different
	// options in results ("redis-cad wait_replicas=1"); defaults to Name.
	// Parse makes labels unique: an entry without label: is Name, plus
	// " k=v" for each ttl, retry, key and option it sets, sorted, when
	// another entry has the same Name.
	Label string
	// Options are backend-specific options (wait_replicas, ...), validated
	// against the lock's registered options.
	Options map[string]string
	// Line is the entry's line in the file.
	Line int
}

// Workload is the workload section.
type Workload struct {
	Clients         int
	Duration        time.Duration // 0 when Ops is set
	Ops             int
	TTL             time.Duration
	CriticalSection time.Duration
	Keys            int
	Mode            string // closed | open
	Rate            float64
	// ProcessPerClient runs each client as its own OS process; Parse sets
	// it when a pause-client fault needs it.
	ProcessPerClient bool
	// KeyPerClient gives client i key i of its own (keys becomes at least
	// clients): no two clients contend, the harness's cost per client shows.
	KeyPerClient bool
	// AcquireTimeout bounds each Acquire call; default max(2*ttl, 10s),
	// with ttl the longest of workload.ttl and every lock's ttl.
	AcquireTimeout time.Duration
	// OnLost is the client model: "ignore" (also when "") or "abort".
	OnLost string
	// ReadShare is the share of operations (0..1) that take the shared
	// side of a read-write lock; 0: none. Only read-write locks take it.
	ReadShare float64
}

// Sweep is the optional sweep section: one run per value.
type Sweep struct {
	Clients []int
	// Fault parameters: Param names "faults[i].field", values as written.
	Params []SweepParam
}

// SweepParam sweeps one fault field across values, written in the file as
// "faults[i].field": [values].
type SweepParam struct {
	Fault  int      // index into Faults
	Field  string   // "for", "latency", ...
	Values []string // as written; client values as in Fault.Client ("3"), links without spaces
	Line   int      // the sweep entry's line
}

// Fault is one scheduled fault (package faults owns the type and its
// table); Line is where it was written.
type Fault = faults.Fault

// Resource is the resource section.
type Resource struct {
	Fencing string // off | observe | enforce
}

// Expect is the expectations for one lock; each field is a condition such as
// "0", ">0", ">=3", "<10", ">=0.5" (gates), or "" for none. Parse stores conditions in
// Condition.String form ("> 0" becomes ">0", "==2" becomes "2"); use
// ParseCondition or Unmet to check them, and Scenario.ExpectFor to get the
// expectations that apply to a lock.
type Expect struct {
	Violations    string
	StaleTokens   string
	StaleRejected string
	StaleAccepted string // stale writes the resource applied
	LostUpdates   string
	Errors        string
	// Incidents, LockFaults, ClientFaults, DuplicateTokens,
	// TokenRegressions and ZeroTokens are the verdict fields
	// (docs/results.md).
	Incidents        string
	LockFaults       string
	ClientFaults     string
	DuplicateTokens  string
	TokenRegressions string
	ZeroTokens       string
	// ChangedReads counts readers that saw the counter change while they
	// read (a safety figure); PeakHolders is the most visits inside at
	// once (a count, not a claim: ">=2" says readers or permit holders
	// did share).
	ChangedReads string
	PeakHolders  string
	// Performance gates: conditions on real numbers (">=5000", "<=20",
	// ">0.5"), met or failed, never inconclusive. Throughput is completed
	// operations per second over the run; AcquireP50Ms, AcquireP99Ms and
	// HandoffP50Ms are latency percentiles in milliseconds (a run without
	// an acquisition or hand-off fails them: not measured);
	// AvailabilityDuringFault is the run's report.Run.AvailabilityDuringFault
	// (completions per second inside the union of the fault windows over
	// completions per second before the first fault), within 0..1.
	Throughput              string
	AcquireP50Ms            string
	AcquireP99Ms            string
	HandoffP50Ms            string
	AvailabilityDuringFault string
	// PermitsLeakedMs is a semaphore's report.Run.PermitsLeakedMs: how
	// long a client was refused or kept waiting while a permit should
	// have been free (another kind fails it: not measured).
	PermitsLeakedMs string
	// MinVisits is how many visits must overlap each fault's window, made
	// by at least two distinct clients, for a safety claim to count as
	// tested (a run without faults: how many visits it needs in all); 0
	// means DefaultMinVisits.
	MinVisits int
	Line      int
}

// LockTTL is lock l's lease length: its own ttl, else the workload's (the
// one place this default is applied: parsing, and the runner for locks
// built without parsing, such as --exec programs).
func (w Workload) LockTTL(l Lock) time.Duration {
	if l.TTL > 0 {
		return l.TTL
	}
	return w.TTL
}
