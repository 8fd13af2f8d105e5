package explore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
)

// Drawable returns the fault types explore draws: the rows of the fault
// table that declare bounds, sorted.
func Drawable() []string {
	var out []string
	for _, name := range faults.Types() {
		if t, _ := faults.Lookup(name); len(t.Bounds) > 0 {
			out = append(out, name)
		}
	}
	return out
}

// Generator draws schedules: the same seed and index always give the same
// schedule.
type Generator struct {
	Seed  int64
	Locks []string
	// Types are the fault types drawn from; empty draws no faults.
	Types []string
}

// TTLs are the leases a run is drawn with.
var TTLs = []time.Duration{750 * time.Millisecond, time.Second, 1500 * time.Millisecond}

// csRatios are the critical sections drawn, relative to the lease.
var csRatios = []float64{0.1, 0.25, 0.5}

// Draw returns run index's schedule, validated. An error means the
// generator drew something the validator refuses: a bug in the generator.
//
// Its lock and first fault type come from a seeded round of every (lock,
// fault type) pair (pair), so every pair is drawn once before any is
// drawn again; the rest of the schedule is random. Half the faults are
// aimed at a live holder (when: holder-inside), and a third of a quorum
// lock's schedules give each of two clients a bare majority (bareMajority,
// when partitions are drawn).
func (g Generator) Draw(index int) (Schedule, error) {
	rng := rand.New(rand.NewPCG(uint64(g.Seed), uint64(index)))
	lock, first := g.pair(index)
	spec, ok := locks.Lookup(lock)
	if !ok {
		return Schedule{}, fmt.Errorf("explore: %q is not a registered lock", lock)
	}
	s := Schedule{
		Name:    fmt.Sprintf("explore-%d-%s", index, lock),
		Lock:    lock,
		Options: map[string]string{},
		Clients: 2 + rng.IntN(4),
		TTL:     TTLs[rng.IntN(len(TTLs))],
	}
	s.CS = time.Duration(float64(s.TTL) * csRatios[rng.IntN(len(csRatios))])
	drawTopology(rng, &s, spec)
	drawOptions(rng, &s, spec)
	shared := ""
	if spec.Quorum && spec.MinRedis <= 5 && slices.Contains(g.Types, "partition") && rng.IntN(3) == 0 {
		shared = bareMajority(rng, &s)
	}
	plan := cluster.PlanOf(clusterSpec(s))
	types := g.applicable(s)
	if len(types) > 0 {
		n := 1 + rng.IntN(4-len(s.Faults)) // at most four in all
		for i := 0; i < n; i++ {
			name := types[rng.IntN(len(types))]
			if i == 0 && slices.Contains(types, first) {
				name = first
			}
			t, _ := faults.Lookup(name)
			f := drawFault(rng, t, s, plan)
			if shared != "" && t.Target == faults.OnServer && rng.IntN(2) == 0 {
				f.Node = shared
			}
			s.Faults = append(s.Faults, f)
		}
	}
	s.Duration = runLength(s)
	s.Description = fmt.Sprintf("explore run %d (seed %d): %s, %d clients, ttl %s, faults %s.",
		index, g.Seed, lock, s.Clients, s.TTL, strings.Join(s.FaultTypes(), ", "))
	if shared != "" {
		s.Description += " Each client is cut from two primaries for the whole run: each holds a bare majority, " + shared + " in both."
	}
	if _, err := s.Parse(); err != nil {
		return s, fmt.Errorf("explore: run %d drew a schedule the validator refuses (a generator bug): %w", index, err)
	}
	return s, nil
}

// pair returns run index's lock and first fault type ("" without types):
// the index-th of a seeded order of every (lock, fault type) pair, over
// again after the last, so every pair is drawn once before any twice.
func (g Generator) pair(index int) (lock, typ string) {
	types := g.Types
	if len(types) == 0 {
		types = []string{""}
	}
	n := len(g.Locks) * len(types)
	order := rand.New(rand.NewPCG(uint64(g.Seed), 0x5eed)).Perm(n)
	k := order[index%n]
	return g.Locks[k/len(types)], types[k%len(types)]
}

// bareMajority makes s Kleppmann's setting: five primaries, two clients,
// each cut from two of them for the whole run, so each client's grants
// rest on a bare majority of three and the two majorities share one
// primary, which it returns. A fault on that primary while one client
// holds (a restart without persistence, a clock jump) lets the other take
// its own three; random targets and cuts seldom line this up.
func bareMajority(rng *rand.Rand, s *Schedule) string {
	s.RedisMode, s.Primaries, s.Replicas, s.Clients = "", 5, 0, 2
	nodes := []string{"redis-0", "redis-1", "redis-2", "redis-3", "redis-4"}
	rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	cut := func(client string, a, b string) faults.Fault {
		return faults.Fault{Type: "partition", Groups: [][]string{{client}, {a, b}}}
	}
	s.Faults = append(s.Faults, cut("client-0", nodes[0], nodes[1]), cut("client-1", nodes[2], nodes[3]))
	return nodes[4]
}

// applicable keeps the generator's types the validator accepts on s's
// topology, each probed on its first target (failover needs Sentinel, a
// clock jump a Redis node): a type with nothing to act on is not drawn.
func (g Generator) applicable(s Schedule) []string {
	plan := cluster.PlanOf(clusterSpec(s))
	var out []string
	for _, name := range g.Types {
		t, ok := faults.Lookup(name)
		if !ok || len(t.Bounds) == 0 {
			continue
		}
		if t.Target == faults.OnServer && len(serverTargets(t, plan)) == 0 {
			continue
		}
		probe := s.Clone()
		f := faults.Fault{Type: name, At: s.TTL}
		target(&f, t, plan, nil)
		setValues(&f, t, s.TTL, func(b faults.Bound) float64 { return b.Max })
		probe.Faults = []faults.Fault{f}
		probe.Duration = runLength(probe)
		if _, err := probe.Parse(); err == nil {
			out = append(out, name)
		}
	}
	return out
}

// drawTopology sets the cluster a lock runs on: Redlock over 3 or 5
// primaries, a single Redis primary with or without a replica and
// Sentinel, a Redis Cluster of 3 primaries with a replica each (a quarter
// of the runs of locks that run on one), 3-member ZooKeeper or etcd, or a
// table backend's section (drawTableSettings).
func drawTopology(rng *rand.Rand, s *Schedule, spec locks.Spec) {
	switch spec.Backend {
	case locks.ZooKeeper, locks.Etcd:
		// Always 3 members (drawn as before they joined the table, so a
		// seed draws the same runs).
		s.Backend, s.Settings = string(spec.Backend), map[string]int{"nodes": 3}
		return
	case locks.Redis:
		drawRedis(rng, s, spec)
		return
	}
	if b, ok := cluster.LookupBackend(string(spec.Backend)); ok {
		s.Backend, s.Settings = b.Name, drawTableSettings(rng, b)
	}
}

// drawRedis draws a Redis topology (drawTopology): the persistence that
// decides what a restart or a power cut loses, and Redlock's primaries,
// a Redis Cluster, or one primary with or without a replica and
// Sentinel.
func drawRedis(rng *rand.Rand, s *Schedule, spec locks.Spec) {
	switch s.Persistence = "none"; rng.IntN(4) {
	case 0:
		s.Persistence = "always"
	case 1:
		s.Persistence = "everysec" // what a power cut tests: the last second's writes
	}
	if spec.RedisCluster && rng.IntN(4) == 0 {
		s.RedisMode, s.Primaries, s.Replicas = cluster.RedisCluster, 3, 1
		return
	}
	if spec.Quorum {
		s.Primaries = 3
		if rng.IntN(2) == 0 {
			s.Primaries = 5
		}
		s.Primaries = max(s.Primaries, spec.MinRedis)
		return
	}
	s.Primaries = 1
	if rng.IntN(3) == 0 {
		s.Replicas, s.Sentinels = 1, 3
	}
}

// drawTableSettings draws each int field of a table backend's section
// from its default and those of the two values above it that the
// backend accepts (nats nodes 1 or 3, postgres replicas 0 to 2); other
// fields keep their defaults.
func drawTableSettings(rng *rand.Rand, b cluster.TableBackend) map[string]int {
	out := map[string]int{}
	for _, f := range b.Fields {
		d, ok := f.Default.(int)
		if f.Kind != "int" || !ok {
			continue
		}
		vals := []int{d}
		for v := d + 1; v <= d+2; v++ {
			if len(f.Allowed) > 0 && !slices.Contains(f.Allowed, strconv.Itoa(v)) {
				continue
			}
			if b.Check != nil {
				if field, _ := b.Check(cluster.Settings{f.Name: v}, ""); field != "" {
					continue
				}
			}
			vals = append(vals, v)
		}
		out[f.Name] = vals[rng.IntN(len(vals))]
	}
	return out
}

// drawOptions sets the lock options explore varies where the lock has
// them: renewal on or off, waiting for a replica's acknowledgement.
func drawOptions(rng *rand.Rand, s *Schedule, spec locks.Spec) {
	for _, o := range spec.Options {
		switch o.Name {
		case "renew":
			if rng.IntN(2) == 0 {
				s.Options["renew"] = "true"
			}
		case "wait_replicas":
			if s.Replicas > 0 && s.RedisMode == "" && rng.IntN(2) == 0 {
				s.Options["wait_replicas"] = "1"
			}
		}
	}
}

// clusterSpec is s's cluster as the cluster package plans it.
func clusterSpec(s Schedule) cluster.Spec {
	cs := cluster.Spec{Provider: cluster.ProviderLocal, Clients: s.Clients}
	switch {
	case s.ZooKeeper > 0:
		cs.Backends = map[string]cluster.Settings{"zookeeper": {"nodes": s.ZooKeeper}}
	case s.Etcd > 0:
		cs.Backends = map[string]cluster.Settings{"etcd": {"nodes": s.Etcd}}
	case s.Backend != "":
		set := cluster.Settings{}
		for k, v := range s.Settings {
			set[k] = v
		}
		cs.Backends = map[string]cluster.Settings{s.Backend: set}
	default:
		cs.Redis = &cluster.RedisSpec{Mode: s.RedisMode, Primaries: s.Primaries, Replicas: s.Replicas, Sentinels: s.Sentinels}
	}
	return cs
}

// runLength is long enough for every fault to start, heal and be
// followed by two leases (evidence and recovery), and at least four
// leases.
func runLength(s Schedule) time.Duration {
	end := 4 * s.TTL
	for _, f := range s.Faults {
		e := f.At + f.For + f.Delay + 2*s.TTL + s.CS
		end = max(end, e)
	}
	return end.Round(time.Millisecond)
}

// drawFault draws one fault of type t: its start (alone, overlapping the
// previous fault or after it), length, target and values within t's
// bounds.
func drawFault(rng *rand.Rand, t faults.Type, s Schedule, plan cluster.Plan) faults.Fault {
	f := faults.Fault{Type: t.Name}
	uniform := func(b faults.Bound) float64 { return b.Min + rng.Float64()*(b.Max-b.Min) }
	setValues(&f, t, s.TTL, uniform)
	if n := len(s.Faults); n > 0 && rng.IntN(2) == 0 {
		prev := s.Faults[n-1]
		if rng.IntN(2) == 0 && prev.For > 0 {
			f.At = prev.At + time.Duration(rng.Float64()*float64(prev.For)) // overlapping
		} else {
			f.At = prev.At + prev.For + prev.Delay + time.Duration(rng.Float64()*float64(s.TTL)) // in sequence
		}
	}
	f.At = f.At.Round(time.Millisecond)
	if rng.IntN(2) == 0 {
		f.When = faults.WhenHolderInside
		f.AfterEnter = time.Duration(rng.Float64() * float64(s.CS)).Round(time.Millisecond)
	}
	target(&f, t, plan, rng)
	return f
}

// setValues sets every field t declares a bound for, with pick choosing
// within the bound.
func setValues(f *faults.Fault, t faults.Type, ttl time.Duration, pick func(faults.Bound) float64) {
	for _, b := range t.Bounds {
		v := pick(b)
		d := time.Duration(v * float64(ttl)).Round(time.Millisecond)
		switch val, _ := faults.LookupValue(b.Field); {
		case b.Field == "at":
			f.At = d
		case b.Field == "for":
			f.For = max(d, time.Millisecond)
		case val.Kind == faults.KindDuration && val.Positive:
			f.SetValue(b.Field, max(d, time.Millisecond))
		case val.Kind == faults.KindDuration:
			f.SetValue(b.Field, d)
		case val.Kind == faults.KindNumber:
			f.SetValue(b.Field, max(1, int(v)))
		case val.Kind == faults.KindFactor:
			f.SetValue(b.Field, float64(int(v*100))/100) // 1.37: two decimals
		}
	}
}

// target sets what f acts on, drawn from the plan (rng nil: the first
// candidate): a server or leader for server faults; a node, one link or
// one direction of a client link for link faults; a server, the holder
// or a minority for partitions; the holder or one client for client
// faults.
func target(f *faults.Fault, t faults.Type, plan cluster.Plan, rng *rand.Rand) {
	pick := func(xs []string) string {
		switch {
		case len(xs) == 0:
			return "" // nothing to act on: the validator refuses the fault
		case rng == nil:
			return xs[0]
		}
		return xs[rng.IntN(len(xs))]
	}
	servers := dataServers(plan)
	switch t.Target {
	case faults.OnServer:
		f.Node = pick(serverTargets(t, plan))
	case faults.OnLinkOrNode:
		if rng != nil && rng.IntN(3) == 0 {
			f.Node = pick(servers)
			return
		}
		f.Link = pick(linkTargets(plan))
	case faults.OnPartition:
		if rng != nil && rng.IntN(3) == 0 && len(servers) > 1 {
			f.Groups = minority(plan, rng)
			return
		}
		f.Isolate = pick(append([]string{"holder"}, servers...))
	case faults.OnClient:
		f.Client = "holder"
		if rng != nil && rng.IntN(4) == 0 {
			f.Client = fmt.Sprint(rng.IntN(plan.Clients))
		}
	}
}

// serverTargets are the plan's nodes of t's kinds (a table backend's
// kinds where its row says t acts on them), and the leader selectors of
// the ensembles among them.
func serverTargets(t faults.Type, plan cluster.Plan) []string {
	kinds := cluster.KindsActedOnBy(t.Name)
	var out []string
	for _, n := range plan.Nodes {
		if slices.Contains(kinds, n.Kind) {
			out = append(out, n.Name)
		}
	}
	for _, sel := range faults.LeaderNames() {
		if k := faults.LeaderKind(sel); slices.Contains(kinds, k) && plan.Count(k) > 1 {
			out = append(out, sel)
		}
	}
	return out
}

// dataServers are the plan's servers other than Sentinels: what a link
// fault on a node, or an isolation, acts on.
func dataServers(plan cluster.Plan) []string {
	var out []string
	for _, n := range plan.Nodes {
		if n.Kind != cluster.KindSentinel {
			out = append(out, n.Name)
		}
	}
	return out
}

// linkTargets are the links a link fault may act on: every client's or
// the holder's link to a server, one client's link,
// and the peer links between servers.
func linkTargets(plan cluster.Plan) []string {
	var out []string
	for _, n := range plan.Nodes {
		if n.Kind == cluster.KindSentinel {
			continue
		}
		out = append(out, "clients->"+n.Name, "holder->"+n.Name)
	}
	for _, l := range plan.Links {
		if plan.Kind(l.From) != "" && plan.Kind(l.To) != "" {
			out = append(out, l.Name()) // a peer link
		} else if strings.HasPrefix(l.From, "client-0") {
			out = append(out, l.Name())
		}
	}
	return out
}

// minority cuts a minority of the data servers (a leader among them for
// ensembles), with the holder, from the rest and the other clients.
func minority(plan cluster.Plan, rng *rand.Rand) [][]string {
	data := dataServers(plan)
	rng.Shuffle(len(data), func(i, j int) { data[i], data[j] = data[j], data[i] })
	k := 1 + rng.IntN(max(1, (len(data)-1)/2))
	a, b := slices.Clone(data[:k]), slices.Clone(data[k:])
	if rng.IntN(2) == 0 {
		a = append(a, "holder") // the holder with the minority, the others where they are
	} else {
		b = append(b, "clients")
	}
	return [][]string{a, b}
}
