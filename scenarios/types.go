package scenarios

import "time"

// Scenario is one parsed and validated scenario file (DESIGN.md §4).
// Durations are already parsed; defaults already applied.
type Scenario struct {
	Name        string
	Description string
	Seed        int64
	Cluster     Cluster
	Locks       []Lock
	Workload    Workload
	Sweep       *Sweep
	Faults      []Fault
	Resource    Resource
	// Expect maps a lock name (or "default") to its expectations.
	Expect map[string]Expect
	// File is where the scenario came from ("scenarios/redis-baseline.yaml"
	// or "builtin:redis-baseline"), for messages.
	File string
}

// Cluster is the cluster section.
type Cluster struct {
	Provider  string // local | docker | external
	Redis     *Redis
	ZooKeeper *Nodes
	Etcd      *Nodes
	External  *External
}

// Redis is cluster.redis.
type Redis struct {
	Primaries   int
	Replicas    int
	Sentinels   int
	Persistence string // none | everysec | always
	Image       string
}

// Nodes is cluster.zookeeper and cluster.etcd.
type Nodes struct {
	Nodes int
	Image string
}

// External is cluster.external.
type External struct {
	Redis     []string
	ZooKeeper []string
	Etcd      []string
}

// Lock is one entry of locks: a name plus per-lock overrides.
type Lock struct {
	Name  string
	TTL   time.Duration // 0: workload.ttl
	Retry time.Duration // 0: the lock's default
	Key   string        // lock name prefix override; "" = default
	// Label distinguishes two entries of the same lock with different
	// options in results ("redis-cad wait_replicas=1"); defaults to Name.
	Label string
	// Options are backend-specific options (wait_replicas, ...), validated
	// against the lock's registered options.
	Options map[string]string
	// Line is the entry's line in the file.
	Line int
}

// Workload is the workload section.
type Workload struct {
	Clients          int
	Duration         time.Duration // 0 when Ops is set
	Ops              int
	TTL              time.Duration
	CriticalSection  time.Duration
	Keys             int
	Mode             string // closed | open
	Rate             float64
	ProcessPerClient bool
	AcquireTimeout   time.Duration // per Acquire call; default max(2*ttl, 10s)
}

// Sweep is the optional sweep section: one run per value.
type Sweep struct {
	Clients []int
	// Fault parameters: Param names "faults[i].field", values as written.
	Params []SweepParam
}

// SweepParam sweeps one fault field across values.
type SweepParam struct {
	Fault  int    // index into Faults
	Field  string // "for", "latency", ...
	Values []string
}

// Fault is one scheduled fault. Fields irrelevant to Type are zero.
type Fault struct {
	Type     string
	At       time.Duration
	For      time.Duration // 0: lasts to the end
	Link     string
	Node     string
	Groups   [][]string
	Isolate  string
	Client   string // "holder" or an index
	Latency  time.Duration
	Jitter   time.Duration
	RateKbps int
	Delay    time.Duration
	Offset   time.Duration
	Line     int
}

// Resource is the resource section.
type Resource struct {
	Fencing string // off | observe | enforce
}

// Expect is the expectations for one lock; each field is a condition such as
// "0", ">0", ">=3", "<10", or "" for none.
type Expect struct {
	Violations    string
	StaleTokens   string
	StaleRejected string
	StaleAccepted string // stale writes the resource applied
	LostUpdates   string
	Errors        string
	Line          int
}
