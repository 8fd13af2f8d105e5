package scenarios

// The scenario field table: every field a scenario file may hold outside
// faults (package faults' table), lock options (the locks registry) and
// expectation keys (expectFields). The parser's unknown-field checks and
// enumerations read it, and docs/scenario-file.md and
// docs/scenario.schema.json are generated from it (fields_test.go -update),
// so the reference cannot drift from what the parser accepts.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all"     // the backend table's rows
	_ "github.com/locklab/locklab/cluster/providers/docker" // provider docker
	_ "github.com/locklab/locklab/cluster/providers/netns"  // provider netns
	"github.com/locklab/locklab/faults"
)

// Kind is the kind of value a scenario field takes.
type Kind string

// Kinds of Field.Kind.
const (
	KindString    Kind = "string"
	KindInt       Kind = "int"
	KindNumber    Kind = "number"
	KindDuration  Kind = "duration" // a Go duration: 500ms, 2s, 1m30s
	KindBool      Kind = "bool"
	KindList      Kind = "list"
	KindSection   Kind = "section"   // a mapping of the fields listed under it
	KindMap       Kind = "map"       // a mapping whose keys the file chooses
	KindCondition Kind = "condition" // 0, N, ">0", ">=N", "<N", "<=N", "==N"
)

// Field is one row of the scenario field table.
type Field struct {
	// Path names the field: "workload.critical_section". An item of a
	// list is "locks[]", an entry of a map "expect.*".
	Path string
	Kind Kind
	// Items is the kind of a list's items.
	Items Kind
	// Required fields must be written.
	Required bool
	// Default is what Parse applies when the field is absent, as the
	// reference shows it; "" when there is none.
	Default string
	// Allowed lists the only values accepted (an enumeration).
	Allowed []string
	// Min is the least value of an int field.
	Min *int
	// Bounds says in words what else limits the value ("> 0").
	Bounds string
	// Example is a YAML value for this field that parses (the reference
	// shows it; the table's test writes it into a scenario).
	Example string
	// Doc is one line for the reference.
	Doc string
}

func atLeast(n int) *int { return &n }

// fieldTable is every scenario field but faults, lock options and
// expectation keys, sections before their fields, in the order the parser
// lists them in messages.
var fieldTable = withBackendTable([]Field{
	{Path: "name", Kind: KindString, Required: true, Bounds: "[a-z0-9-]+", Example: "my-scenario",
		Doc: "the scenario's name; results go to results/<name>-<time>/"},
	{Path: "description", Kind: KindString, Example: "Redis locks under a paused holder.",
		Doc: "one paragraph for reports and `bench list`"},
	{Path: "references", Kind: KindList, Items: KindString, Example: "[https://martin.kleppmann.com/2016/02/08/how-to-do-distributed-locking.html]",
		Doc: "where the failure the scenario reproduces was reported (URLs or citations): the known-failure catalogue (`chaos run --known`) lists them"},
	{Path: "seed", Kind: KindInt, Default: "1", Example: "42",
		Doc: "seeds every random choice of the run (key choice, retry jitter), so a run repeats"},
	{Path: "cluster", Kind: KindSection,
		Doc: "where the servers run and how many; a backend section the locks need but the file leaves out is added with one node (Redis: as many primaries as the locks need)"},
	{Path: "locks", Kind: KindList, Items: KindSection, Required: true, Example: "[redis-cad, zk-recipe]",
		Doc: "the locks to run, each on a fresh cluster: a lock name, or a mapping {name, ttl, retry, key, label, <option>: value}"},
	{Path: "workload", Kind: KindSection,
		Doc: "what the clients do: each takes the lock, reads the shared resource, holds, writes, releases"},
	{Path: "sweep", Kind: KindMap,
		Doc: "run the scenario once per value (every combination, clients outermost, at most 1000 runs per lock)"},
	{Path: "faults", Kind: KindList, Items: KindSection, Example: "[{type: pause, at: 2s, for: 3s, node: redis-0}]",
		Doc: "faults on a schedule counted from the workload's start; the fields of each type are under [Faults](#faults)"},
	{Path: "resource", Kind: KindSection, Doc: "the shared resource the clients write"},
	{Path: "expect", Kind: KindMap,
		Doc: "conditions on each run's counts, keyed by a lock name, a label or default; chaos exits 1 when one fails"},

	{Path: "cluster.provider", Kind: KindString, Default: "local", Allowed: []string{"local", "docker", "external", "netns"}, Example: "local",
		Doc: "local: Debian's server binaries as child processes; docker: the same topologies as containers; external: servers you already run; netns: each server in its own network namespace, faults as dropped packets (root)"},
	{Path: "cluster.external", Kind: KindSection, Doc: "the servers of every backend the locks use, with provider external only"},

	{Path: "locks[].name", Kind: KindString, Required: true, Example: "redis-cad",
		Doc: "a registered lock (see the [lock catalogue](#lock-catalogue))"},
	{Path: "locks[].ttl", Kind: KindDuration, Default: "workload.ttl", Bounds: "> 0", Example: "2s",
		Doc: "this lock's lease length"},
	{Path: "locks[].retry", Kind: KindDuration, Default: "the lock's own", Bounds: "> 0", Example: "50ms",
		Doc: "the longest a blocked acquire waits between attempts when no notification arrives"},
	{Path: "locks[].key", Kind: KindString, Default: "locklab:<scenario>:", Example: "myapp-lock",
		Doc: "prefix of every key or node the lock creates"},
	{Path: "locks[].label", Kind: KindString, Default: "the name, plus \" k=v\" of the ttl, retry, key and options set when the lock appears twice", Example: "cad-short",
		Doc: "the entry's name in results and expect: (unique; not \"default\", not another entry's lock name)"},

	{Path: "workload.clients", Kind: KindInt, Min: atLeast(1), Default: "1", Example: "8",
		Doc: "concurrent clients, each with its own connections"},
	{Path: "workload.duration", Kind: KindDuration, Default: "10s unless ops is set", Bounds: "> 0; not with ops", Example: "30s",
		Doc: "how long the workload runs"},
	{Path: "workload.ops", Kind: KindInt, Min: atLeast(1), Bounds: "not with duration", Example: "1000",
		Doc: "critical sections to attempt across all clients, instead of a duration"},
	{Path: "workload.ttl", Kind: KindDuration, Default: "10s", Bounds: "> 0", Example: "2s",
		Doc: "the lease length of every lock without its own ttl"},
	{Path: "workload.critical_section", Kind: KindDuration, Default: "0", Bounds: ">= 0", Example: "5ms",
		Doc: "how long a client holds the lock between its read and its write"},
	{Path: "workload.keys", Kind: KindInt, Min: atLeast(1), Default: "1", Example: "4",
		Doc: "distinct lock keys; each operation picks one at random (seeded)"},
	{Path: "workload.mode", Kind: KindString, Default: "closed", Allowed: []string{"closed", "open"}, Example: "open",
		Doc: "closed: each client starts its next operation when the last ends; open: operations arrive at rate, latencies count from the scheduled start"},
	{Path: "workload.rate", Kind: KindNumber, Bounds: "> 0; mode open only, and required there", Example: "200",
		Doc: "arrival rate of an open workload, operations per second across clients"},
	{Path: "workload.process_per_client", Kind: KindBool, Default: "false; true when a pause-client fault needs it", Example: "true",
		Doc: "run each client as its own OS process"},
	{Path: "workload.acquire_timeout", Kind: KindDuration, Default: "max(2 × the longest ttl, 10s)", Bounds: "> 0", Example: "30s",
		Doc: "bound of one acquire call; a client that times out counts an error and tries again"},
	{Path: "workload.on_lost", Kind: KindString, Default: "ignore", Allowed: []string{"ignore", "abort"}, Example: "abort",
		Doc: "ignore: write whatever happened to the lease; abort: a careful client checks its lease (lost, promised validity) just before the write and skips it"},
	{Path: "workload.read_share", Kind: KindNumber, Default: "0", Bounds: "0..1; read-write locks (kind rw) only", Example: "0.5",
		Doc: "share of operations that take the shared (read) side of a read-write lock, drawn from the seeded random source; a reader reads at entry and again before leaving and writes nothing"},
	{Path: "workload.key_per_client", Kind: KindBool, Default: "false", Bounds: "keys becomes at least clients", Example: "true",
		Doc: "client i always uses key i: no contention, the harness's cost per client shows (scale runs)"},

	{Path: "sweep.clients", Kind: KindList, Items: KindInt, Bounds: "each >= 1, no duplicates", Example: "[1, 4, 16]",
		Doc: "one run per client count"},
	{Path: `sweep."faults[N].FIELD"`, Kind: KindList, Bounds: "any scalar field of fault N but type; quote the key in flow style", Example: "[1s, 5s]",
		Doc: "one run per value of a fault field; each value is validated as if written in the fault"},

	{Path: "resource.fencing", Kind: KindString, Default: "off", Allowed: []string{"off", "observe", "enforce"}, Example: "enforce",
		Doc: "off: tokens are not compared; observe: a write with a token lower than one seen counts as stale; enforce: such a write is rejected"},
})

// expectDocs documents expectation keys; expectFields (parse.go) is the
// list of keys, and a key missing here is a condition with a generic line.
var expectDocs = map[string]Field{
	"violations":                {Doc: "times a client entered the critical section while another was inside"},
	"incidents":                 {Doc: "maximal groups of overlapping visits (one overlap of three clients is one incident)"},
	"lock_faults":               {Doc: "incidents where the lock granted again while the earlier holder's promised validity still ran: nothing on the client side repairs them"},
	"client_faults":             {Doc: "incidents where the earlier holder stayed inside after its promise ran out: fencing repairs them"},
	"duplicate_tokens":          {Doc: "visits presenting a non-zero token another holder presented before"},
	"token_regressions":         {Doc: "grants whose token is not greater than one granted earlier in real time"},
	"zero_tokens":               {Doc: "grants without a token (token 0) from a lock that reports fencing: its writes pass any resource-side check"},
	"changed_reads":             {Doc: "readers of a read-write lock that read the counter at entry and again before leaving and saw it change (each is also a lost update)"},
	"peak_holders":              {Doc: "the most visits inside the lock's resource at once: readers sharing a read-write lock, holders of a semaphore's permits (not a safety claim)", Example: `">=2"`},
	"stale_tokens":              {Doc: "writes with a token lower than one the resource had seen"},
	"stale_rejected":            {Doc: "stale writes the resource rejected (resource.fencing: enforce only)"},
	"stale_accepted":            {Doc: "stale writes the resource applied"},
	"lost_updates":              {Doc: "increments lost to an overlapping writer (writes minus the counter's final value)"},
	"errors":                    {Doc: "failed operations of every kind together"},
	"throughput":                {Doc: "completed critical sections per second", Example: `">=100"`},
	"acquire_p50_ms":            {Doc: "median time to acquire the lock, ms", Example: `"<=20"`},
	"acquire_p99_ms":            {Doc: "99th percentile of the time to acquire the lock, ms", Example: `"<=200"`},
	"handoff_p50_ms":            {Doc: "median hand-off: a holder's exit to the next entry by a client that was already waiting, ms", Example: `"<=5"`},
	"availability_during_fault": {Doc: "completions per second during the fault windows over the rate before the first fault (0..1; needs faults)", Example: `">=0.5"`},
	"permits_leaked_ms":         {Doc: "a semaphore's leaked permits: how long, in ms, a client was refused or kept waiting while fewer holders than its permits held one and a permit was owed by a holder that died or outlived its promise (a hand-off after a release counts nothing; semaphores only)", Example: `">=1000"`},
	"min_visits": {Kind: KindInt, Min: atLeast(0), Default: "3", Example: "5",
		Doc: "visits that must overlap each fault's evidence window (its start to a lease after its heal), with at least 2 clients contending there (a visit, or an acquire refused, timed out or still waiting while another client held the lock), for a safety count of 0 to count as evidence (else the condition is inconclusive)"},
}

// expectField returns the row of expectation key name, a condition unless
// expectDocs says otherwise.
func expectField(name string) Field {
	f := expectDocs[name]
	f.Path = "expect.*." + name
	if f.Kind == "" {
		f.Kind = KindCondition
	}
	if f.Doc == "" {
		f.Doc = "condition on the run's " + strings.ReplaceAll(name, "_", " ")
	}
	if f.Example == "" {
		f.Example = "0"
	}
	if f.Kind == KindCondition && IsGate(name) {
		f.Bounds = "N may be a decimal; a performance gate: met or failed, never inconclusive"
	}
	return f
}

// faultFieldDocs documents the fields every fault type shares (type, at,
// for and the targets); which fields exist, which types take them and the
// value fields' own docs are package faults' table (faults.FieldNames,
// faults.Lookup, faults.LookupValue): see faultField.
var faultFieldDocs = map[string]Field{
	"type":    {Kind: KindString, Example: "pause", Doc: "the fault type (below)"},
	"at":      {Kind: KindDuration, Bounds: ">= 0", Example: "2s", Doc: "when the fault starts, counted from the workload's start"},
	"for":     {Kind: KindDuration, Default: "to the run's end", Bounds: "> 0", Example: "5s", Doc: "how long until it heals"},
	"link":    {Kind: KindString, Bounds: "A->B, a link the cluster proxies", Example: "client-0->redis-0", Doc: "one directed link: client-N, clients, holder or a server on the left, a server on the right"},
	"node":    {Kind: KindString, Example: "redis-0", Doc: "a server (redis-0, redis-0-r0, sentinel-0, zk-1, etcd-2, zk-leader, etcd-leader) or, for link faults, clients, client-N or holder: every link touching it"},
	"groups":  {Kind: KindList, Items: KindList, Example: "[[zk-0], [zk-1, zk-2, clients]]", Doc: "partition: lists of node names (servers, clients, client-N, holder, waiters: every client but the holder); every proxied link between two groups is cut"},
	"isolate": {Kind: KindString, Example: "zk-leader", Doc: "partition: this node against every other server and the clients"},
	"client":  {Kind: KindString, Example: "holder", Doc: "holder (the client inside the critical section when the fault starts), an index (0) or client-N"},
	"when": {Kind: KindString, Default: "time", Allowed: []string{faults.WhenTime, faults.WhenHolderInside}, Example: "holder-inside",
		Doc: "time: fire at at; holder-inside: fire at the first moment at or after at when a client is inside its critical section (aimed at the race)"},
	"after_enter": {Kind: KindDuration, Default: "0", Bounds: ">= 0", Example: "150ms",
		Doc: "with when: holder-inside, fire once that client has been inside this long"},
	"after_enter_max": {Kind: KindDuration, Default: "after_enter", Bounds: ">= after_enter", Example: "400ms",
		Doc: "with when: holder-inside, each run draws its after_enter from [after_enter, after_enter_max] with its seed: seeded runs hit the holder at different phases"},
}

// faultField is the reference row of the fault field called name (Path:
// the name): a shared field's from faultFieldDocs, a value field's from
// its declaration in the fault table.
func faultField(name string) Field {
	v, ok := faults.LookupValue(name)
	if !ok {
		f := faultFieldDocs[name]
		f.Path = name
		return f
	}
	return valueField(v)
}

// faultFieldOf is faultField as fault type typ declares the field: two
// types may declare one value name differently (a partition's direction
// and a drop's).
func faultFieldOf(typ, name string) Field {
	if ft, ok := faults.Lookup(typ); ok {
		for _, v := range ft.Values {
			if v.Name == name {
				return valueField(v)
			}
		}
	}
	return faultField(name)
}

// valueField is the reference row of a value field's declaration.
func valueField(v faults.Value) Field {
	name := v.Name
	f := Field{Path: name, Kind: KindInt, Default: v.Default, Allowed: v.Allowed, Bounds: v.Bounds(), Example: v.Example, Doc: v.Doc}
	switch v.Kind {
	case faults.KindDuration:
		f.Kind = KindDuration
	case faults.KindEnum:
		f.Kind = KindString
	case faults.KindFactor:
		f.Kind = KindNumber
	case faults.KindNumber:
		if v.Positive {
			f.Min, f.Bounds = atLeast(1), ""
		}
	}
	return f
}

// fieldNames returns the names of the fields directly under section, in
// table order ("" for the top level, "locks[]" for a lock entry).
func fieldNames(section string) []string {
	var out []string
	for _, f := range fieldTable {
		if parent, name := splitPath(f.Path); parent == section {
			out = append(out, name)
		}
	}
	return out
}

// allowedValues returns the values the field at path accepts.
func allowedValues(path string) []string {
	for _, f := range fieldTable {
		if f.Path == path {
			return f.Allowed
		}
	}
	panic("scenarios: no field " + path + " in the field table")
}

// splitPath splits a field path at its last dot outside quotes.
func splitPath(path string) (parent, name string) {
	quoted := false
	for i := len(path) - 1; i >= 0; i-- {
		switch path[i] {
		case '"':
			quoted = !quoted
		case '.':
			if !quoted {
				return path[:i], path[i+1:]
			}
		}
	}
	return "", path
}

// Fields returns the scenario field table (a copy): every field but those
// of faults (faults.Lookup), lock options (locks.Spec.Options) and
// expectation keys (ExpectFields).
func Fields() []Field {
	return append([]Field(nil), fieldTable...)
}

// ExpectFields returns the keys an expect: entry accepts, in order.
func ExpectFields() []string {
	return append([]string(nil), expectFields...)
}

// withBackendTable adds the rows of the cluster's backend table to base:
// each backend's section after cluster.provider, then after
// cluster.external every backend's fields and its external list.
func withBackendTable(base []Field) []Field {
	var sections, fields, external []Field
	for _, b := range cluster.Backends() {
		path := "cluster." + b.Name
		sections = append(sections, Field{Path: path, Kind: KindSection, Doc: b.Doc})
		for _, f := range b.Fields {
			row := Field{Path: path + "." + f.Name, Kind: Kind(f.Kind), Min: f.Min, Allowed: f.Allowed, Example: f.Example, Doc: f.Doc}
			if f.Default != nil {
				row.Default = fmt.Sprint(f.Default)
			}
			if f.DefaultDoc != "" {
				row.Default = f.DefaultDoc
			}
			fields = append(fields, row)
		}
		doc := b.ExternalDoc
		if doc == "" {
			doc = b.Name + " servers"
		}
		external = append(external, Field{Path: "cluster.external." + b.Name, Kind: KindList, Items: KindString, Bounds: "host:port",
			Example: fmt.Sprintf("[%s1:%d]", b.Name, b.ClientPort), Doc: doc})
	}
	insertAfter := func(rows []Field, path string, add []Field) []Field {
		i := slices.IndexFunc(rows, func(f Field) bool { return f.Path == path })
		return slices.Insert(rows, i+1, add...)
	}
	base = insertAfter(base, "cluster.provider", sections)
	return insertAfter(base, "cluster.external", append(fields, external...))
}
