package atlas

import (
	"fmt"
	"strings"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/locks"
)

// Family is one kind of fault, as a time-compressed scenario template.
// Scenario builds the scenario for one lock (YAML, so the file written
// into the atlas folder is exactly what ran), or says why the family does
// not apply to it.
type Family struct {
	// Name is the column name ("pause-holder-long").
	Name string
	// Doc is one line for the atlas and --help.
	Doc string
	// Control marks a family that must read safe for every lock that is
	// correct without faults (a short pause, a small latency).
	Control bool
	// Fault builds one lock's setup; it returns a reason when the family
	// does not apply to the lock.
	Fault func(t timing, l lockInfo) (setup, string)
}

// setup is one lock's scenario of a family: its cluster and faults, and
// the workload's timing where it differs from the time scale's default.
type setup struct {
	// Cluster is the cluster section's backend line.
	Cluster string
	Faults  []string
	// Run, TTL and CS replace the default run length (at + long + 2 x
	// ttl), lease and critical section (ttl/5) when set.
	Run, TTL, CS time.Duration
	// Renew runs a lock that renews only on request with renew: true, for
	// faults that must find the holder inside longer than its lease.
	Renew bool
	// Clients replaces the default of 3 clients when set.
	Clients int
	// Control, when set, says why the cell is a control and not a safety
	// claim: the fault cannot, by the lock's design, let a second client
	// in (one of three Redlock nodes lost, keys reloaded, a short pause).
	Control string
}

// timing is the time scale every family derives its parameters from: the
// lease (ttl, session, lease time) and the run's length; and the cluster
// provider its scenarios run on, which decides whether a fault acts on
// bytes in a proxy or on packets in the kernel.
type timing struct {
	TTL time.Duration
	// Provider is cluster.provider of every scenario (local, netns, ...).
	Provider string
}

func (t timing) at() time.Duration       { return t.TTL * 3 / 2 }
func (t timing) long() time.Duration     { return t.TTL * 5 / 2 }
func (t timing) short() time.Duration    { return t.TTL / 4 }
func (t timing) critical() time.Duration { return t.TTL / 5 }

// lockInfo is what a family needs to know about a lock.
type lockInfo struct {
	Name    string
	Backend locks.Backend
	// Quorum is true for locks taking a majority of independent Redis
	// primaries (redlock, redsync).
	Quorum bool
	// RenewOption: the lock renews its lease with option renew: true;
	// Renews: it renews by design (sessions, leases kept alive, watchdogs).
	RenewOption, Renews bool
	// Kind is what the lock promises about holders inside at once.
	Kind locks.Kind
}

// Atlas workloads of the lock kinds: half the operations readers on a
// read-write lock, and semaphores of 2 permits, so an over-grant needs a
// third holder and can happen. A semaphore's cell has permits - 1 more
// clients than a mutex's, so as many clients wait (3 by default, what
// min_visits asks of a fault's exposure).
const (
	atlasReadShare = "0.5"
	atlasPermits   = 2
)

func infoOf(s locks.Spec) lockInfo {
	l := lockInfo{Name: s.Name, Backend: s.Backend, Quorum: s.Quorum, Kind: s.KindOf()}
	for _, o := range s.Options {
		l.RenewOption = l.RenewOption || o.Name == "renew"
	}
	l.Renews = s.Renews
	return l
}

// ms writes d as a YAML duration in milliseconds.
func ms(d time.Duration) string { return fmt.Sprintf("%dms", d.Milliseconds()) }

// servers returns the cluster line of the lock's usual topology and its
// server node names (3 members; 3 Redlock primaries), with Redis
// persistence none.
func servers(l lockInfo) (string, []string) { return serversWith(l, "none") }

// serversWith is servers with the given Redis persistence.
func serversWith(l lockInfo, persistence string) (string, []string) {
	if b, ok := rowOf(l); ok {
		if everyFamily[l.Backend] {
			return b.Name + ": {nodes: 3}", planNames(b, cluster.Settings{"nodes": 3})
		}
		return tableServers(b)
	}
	switch {
	case l.Quorum:
		return "redis: {primaries: 3, persistence: " + persistence + "}", []string{"redis-0", "redis-1", "redis-2"}
	}
	return "redis: {primaries: 1, persistence: " + persistence + "}", []string{"redis-0"}
}

// rowOf returns the row of l's backend when the atlas writes l's
// families from its row: every backend's but Redis's, whose topologies
// (Redlock's primaries, a persistence per family) the families name
// themselves.
func rowOf(l lockInfo) (cluster.TableBackend, bool) {
	if l.Backend == locks.Redis {
		return cluster.TableBackend{}, false
	}
	return cluster.LookupBackend(string(l.Backend))
}

// tableServers is the usual topology of a lock on a backend of the
// table: its section with every default, and the nodes of its plan.
func tableServers(b cluster.TableBackend) (string, []string) {
	return b.Name + ": {}", planNames(b, cluster.Settings{})
}

// planNames are the nodes b plans for its section set.
func planNames(b cluster.TableBackend, set cluster.Settings) []string {
	var names []string
	if b.Plan != nil {
		nodes, _ := b.Plan(b.Settle(set))
		for _, n := range nodes {
			names = append(names, n.Name)
		}
	}
	return names
}

// tableFamilies are the families written for every backend of the table:
// they act on the holder and its links, not on one server's role; the
// others are not applicable to a table backend's locks yet, but for the
// backends in everyFamily, and restart-empty for a backend that keeps
// everything in memory (TableBackend.Volatile: memcached).
var tableFamilies = map[string]bool{"baseline": true, "pause-holder-short": true, "pause-holder-long": true,
	"partition-holder": true, "latency-small": true, "reset-storm": true, "packet-loss": true}

// everyFamily are the table's backends whose locks every family is
// written for, on 3 members and aimed at their row's leader selector
// (servers, leader): ZooKeeper and etcd, which had them before they
// joined the table.
var everyFamily = map[locks.Backend]bool{locks.ZooKeeper: true, locks.Etcd: true}

// forTable makes the families not written for the table's backends
// say so for their locks.
func forTable(fs []Family) []Family {
	for i, f := range fs {
		if tableFamilies[f.Name] {
			continue
		}
		fault := f.Fault
		fs[i].Fault = func(t timing, l lockInfo) (setup, string) {
			if b, ok := rowOf(l); ok && !everyFamily[l.Backend] && !(f.Name == "restart-empty" && b.Volatile) {
				return notApplicable(fmt.Sprintf("%s is not written for %s yet (its locks have the baseline, holder and link families)", f.Name, l.Backend))
			}
			return fault(t, l)
		}
	}
	return fs
}

// leader is the node a leader fault acts on: the ZooKeeper or etcd leader
// when the fault starts, the single Redis primary, one Redlock node.
func leader(l lockInfo) string {
	if b, ok := rowOf(l); ok && b.Leader != "" {
		return b.Leader
	}
	return "redis-0"
}

func fault(kind string, at time.Duration, rest string) string {
	return fmt.Sprintf("{at: %s, type: %s, %s}", ms(at), kind, rest)
}

// aimed is fault aimed at the race: it fires at the first moment at or
// after at when a client is inside its critical section (of length cs),
// each seeded run at its own phase of it (after_enter drawn from the
// first 90%), so no run's rhythm can dodge the fault.
func aimed(kind string, at, cs time.Duration, rest string) string {
	return fmt.Sprintf("{at: %s, type: %s, when: holder-inside, after_enter: 0ms, after_enter_max: %s, %s}",
		ms(at), kind, ms(cs*9/10), rest)
}

// aimedEarly is aimed with the phase drawn from the first third of the
// critical section: faults that take the key (restarts, clock jumps, power
// cuts) leave the holder inside long enough after the server serves again
// for the race to be tried.
func aimedEarly(kind string, at, cs time.Duration, rest string) string {
	return aimed(kind, at, cs/3, rest)
}

// oneOfThree is why a fault on one of three Redlock primaries is a
// control: the holder's key stays on the other two, a majority, when all
// three took it. Under contention some grants rest on two (the counter
// bare_grants), and a fault on one of those two is Kleppmann's case: the
// control then reads unsafe, and rightly.
const oneOfThree = "when all 3 Redlock primaries took the holder's key it stays on 2, a majority, and no second grant is possible; " +
	"a grant that only 2 took (counter bare_grants: a waiter's request held the third) is Kleppmann's bare majority, which this fault on one of the two breaks"

// usual is the setup of the lock's usual topology with these faults.
func usual(l lockInfo, fs ...string) (setup, string) {
	c, _ := servers(l)
	return setup{Cluster: c, Faults: fs}, ""
}

// onEveryServer is the usual setup with one fault per server node.
func onEveryServer(l lockInfo, faultOn func(node string) string) (setup, string) {
	_, ns := servers(l)
	fs := make([]string, len(ns))
	for i, n := range ns {
		fs[i] = faultOn(n)
	}
	return usual(l, fs...)
}

// notApplicable is the answer of a family that does not apply.
func notApplicable(reason string) (setup, string) { return setup{}, reason }

// Families returns every built-in family, in column order.
func Families() []Family {
	return forTable([]Family{
		{Name: "baseline", Doc: "no fault: the availability every other cell is measured against", Control: true,
			Fault: func(t timing, l lockInfo) (setup, string) { return usual(l) }},
		{Name: "pause-holder-short", Doc: "holder process paused (SIGSTOP) for ttl/4: must be safe", Control: true,
			Fault: func(t timing, l lockInfo) (setup, string) {
				return usual(l, fault("pause-client", t.at(), "for: "+ms(t.short())+", client: holder"))
			}},
		{Name: "pause-holder-long", Doc: "holder process paused for 2.5 x ttl (a GC or VM pause past its lease)",
			Fault: func(t timing, l lockInfo) (setup, string) {
				return usual(l, fault("pause-client", t.at(), "for: "+ms(t.long())+", client: holder"))
			}},
		{Name: "partition-holder", Doc: "holder cut from every server for 2.5 x ttl while inside for 3 x ttl (renewal on)",
			Fault: partitionHolder},
		{Name: "pause-leader", Doc: "the Redis primary, one Redlock node or the ZooKeeper/etcd leader paused (SIGSTOP) for 2.5 x ttl",
			Fault: func(t timing, l lockInfo) (setup, string) {
				s, _ := usual(l, aimed("pause", t.at(), t.critical(), "for: "+ms(t.long())+", node: "+leader(l)))
				switch {
				case l.Quorum:
					s.Control = oneOfThree
				case l.Backend == locks.Redis:
					s.Control = "a paused single primary grants nothing while paused, and the holder leaves before its lease ends"
				}
				return s, ""
			}},
		{Name: "kill-leader", Doc: "Sentinel failover of the single Redis primary (replication 5s behind, holder inside 5s across the promotion, ttl 6s), one Redlock node killed, the ZooKeeper/etcd leader killed",
			Fault: killLeader},
		{Name: "minority-leader", Doc: "the ZooKeeper/etcd leader cut from the other members and every client for 2.5 x ttl; the Redis primary, with one client, cut from its replica, the Sentinels and the other clients for 8s (ttl 6s)",
			Fault: minorityLeader},
		{Name: "restart-empty", Doc: "a Redis node (the primary, one Redlock node), or the server of a backend that keeps everything in memory (memcached), restarted at once without persistence",
			Fault: func(t timing, l lockInfo) (setup, string) { return restart(t, l, "none") }},
		{Name: "restart-always", Doc: "the same restart with appendonly yes, appendfsync always: the node reloads its keys",
			Fault: func(t timing, l lockInfo) (setup, string) { return restart(t, l, "always") }},
		{Name: "clock-jump", Doc: "a Redis node's (one Redlock node's, the ZooKeeper leader's) own wall clock jumps 10 x ttl forward while a holder is inside (real: the clock shim)",
			Fault: func(t timing, l lockInfo) (setup, string) {
				return clockFault(t, l, "offset: "+ms(10*t.TTL), "clock-jump")
			}},
		// Not a control: the heal sets the clock right again, a forward
		// jump of 10 x ttl for every key set while it was back.
		{Name: "clock-jump-back", Doc: "the same node's clock jumps 10 x ttl back and is set right at the heal: keys set meanwhile then expire up to 10 x ttl early",
			Fault: func(t timing, l lockInfo) (setup, string) {
				return clockFault(t, l, "offset: -"+ms(10*t.TTL), "clock-jump")
			}},
		{Name: "clock-drift", Doc: "the same node's clock runs 1.5x fast for 2.5 x ttl while holders stay inside 4/5 of the ttl: keys expire after 2/3 of it (against Redlock's drift factor)",
			Fault: func(t timing, l lockInfo) (setup, string) {
				s, reason := clockFault(t, l, "for: "+ms(t.long())+", rate: 1.5", "clock-drift")
				if reason == "" {
					// A key expires 2/3 of a ttl after its grant: a holder
					// inside 4/5 of it, hit early, outlives its key.
					s.CS = t.TTL * 4 / 5
					s.Faults[0] = aimed("clock-drift", t.at(), t.TTL/9, "node: "+leader(l)+", for: "+ms(t.long())+", rate: 1.5")
				}
				return s, reason
			}},
		{Name: "latency-small", Doc: "ttl/20 added on every link of every server for 2.5 x ttl: must be safe", Control: true,
			Fault: func(t timing, l lockInfo) (setup, string) {
				return onEveryServer(l, func(n string) string {
					return fault("latency", t.at(), fmt.Sprintf("for: %s, node: %s, latency: %s", ms(t.long()), n, ms(t.TTL/20)))
				})
			}},
		{Name: "reset-storm", Doc: "every client connection to every server reset, and every new one reset on its first bytes, for 2.5 x ttl, from the first moment a holder is inside",
			Fault: func(t timing, l lockInfo) (setup, string) {
				// Aimed, the same moment for every server (after_enter 0,
				// no range): fired at a fixed time on a loaded machine the
				// storm often began with nobody inside, and the run was no
				// evidence.
				return onEveryServer(l, func(n string) string {
					return fault("reset", t.at(), fmt.Sprintf("when: holder-inside, after_enter: 0ms, for: %s, link: clients->%s", ms(t.long()), n))
				})
			}},
		{Name: "packet-loss", Doc: fmt.Sprintf("%d%% of the packets dropped both ways on every link of every server for 2.5 x ttl (provider netns only)", lossPercent),
			Fault: packetLoss},
		{Name: "majority-restart-empty", Doc: "Redlock over 5 primaries, each of 2 clients cut from 2 of them, so a holder holds a bare majority (3 of 5); the primary both majorities share restarts empty while one holds: the other takes its 3",
			Fault: func(t timing, l lockInfo) (setup, string) {
				return bareMajority(t, l, func(at time.Duration) string {
					return aimed("restart", at, majorityTTL(t)*3/8, "node: "+sharedNode+", delay: 0s")
				})
			}},
		{Name: "majority-clock-jump", Doc: "the same bare majorities over 5 primaries; the shared primary's clock jumps 10 x ttl forward while one holds: its key expires early and the other client takes its 3",
			Fault: func(t timing, l lockInfo) (setup, string) {
				return bareMajority(t, l, func(at time.Duration) string {
					return aimed("clock-jump", at, majorityTTL(t)*3/8, "node: "+sharedNode+", offset: "+ms(10*majorityTTL(t)))
				})
			}},
		{Name: "power-cut", Doc: "the Redis primary (appendfsync always), one Redlock node or the ZooKeeper/etcd leader loses power while a holder is inside: what was fsynced survives",
			Fault: func(t timing, l lockInfo) (setup, string) {
				if l.Backend == locks.Redis {
					c, _ := serversWith(l, "always")
					return setup{Cluster: c, CS: keyHeldCS(t), Faults: []string{aimedEarly("power-cut", t.at(), keyHeldCS(t), "node: redis-0, delay: 0s")},
						Control: "appendfsync always: everything acknowledged was fsynced, so the holder's key survives"}, ""
				}
				s, _ := usual(l, aimed("power-cut", t.at(), t.critical(), "node: "+leader(l)+", delay: 0s"))
				s.Control = "the members fsync their log before they answer: no acknowledged session or lease is lost"
				return s, ""
			}},
		{Name: "power-cut-everysec", Doc: "a Redis primary with appendfsync everysec (a Redlock bare majority's shared node) loses power while a holder is inside: the key written less than a second ago is gone",
			Fault: func(t timing, l lockInfo) (setup, string) {
				switch {
				case l.Backend != locks.Redis:
					return notApplicable(string(l.Backend) + " fsyncs before it answers (cluster.*.fsync: true): power-cut is its family")
				case l.Quorum:
					s, reason := bareMajority(t, l, func(at time.Duration) string {
						return aimed("power-cut", at, majorityTTL(t)*3/8, "node: "+sharedNode+", delay: 0s")
					})
					s.Cluster = strings.Replace(s.Cluster, "persistence: none", "persistence: everysec", 1)
					return s, reason
				}
				c, _ := serversWith(l, "everysec")
				return setup{Cluster: c, CS: keyHeldCS(t), Faults: []string{aimedEarly("power-cut", t.at(), keyHeldCS(t), "node: redis-0, delay: 0s")}}, ""
			}},
		killK(1, 3), killK(2, 3), killK(1, 5), killK(2, 5), killK(3, 5),
	})
}

// sharedNode is the one primary both bare majorities of bareMajority hold.
const sharedNode = "redis-2"

// bareMajority is Kleppmann's counterexample to Redlock (2N+1 = 5, N = 2):
// client-0 is cut from redis-3 and redis-4 for the whole run, client-1
// from redis-0 and redis-1, so whoever holds the lock holds exactly three
// primaries, one of them sharedNode. nodeFault makes sharedNode forget the
// holder's key (a restart without persistence, a clock jump); the other
// client then takes sharedNode and its own two: a second grant inside the
// first holder's validity, a lock fault no client-side check can notice.
//
// The lease is majorityTTL and the critical section 3/4 of it, so a holder
// is inside nearly all the time and the other client, even one whose
// release first waits out a cut primary (redsync waits 5 s), is acquiring
// again while the holder is still inside. The node fault comes twice, 3/8
// of the lease apart, so one of them finds a holder inside whatever the
// library's rhythm.
func bareMajority(t timing, l lockInfo, nodeFault func(at time.Duration) string) (setup, string) {
	if !l.Quorum {
		return notApplicable("a bare majority needs a quorum lock over independent Redis primaries")
	}
	cut := func(client int, a, b string) string {
		return fault("partition", 0, fmt.Sprintf("groups: [[client-%d], [%s, %s]]", client, a, b))
	}
	ttl := majorityTTL(t)
	at := ttl * 3 / 2
	return setup{Cluster: "redis: {primaries: 5, persistence: none}",
		Faults: []string{cut(0, "redis-3", "redis-4"), cut(1, "redis-0", "redis-1"),
			nodeFault(at), nodeFault(at + ttl/2)},
		Clients: 2, TTL: ttl, CS: ttl * 3 / 4, Run: at + ttl*3/2}, ""
}

// majorityTTL is the lease of the bare-majority families: 8 x ttl, longer
// than a cut primary holds up redsync's release (5 s), so the critical
// section can outlast that wait and still end inside the lease.
func majorityTTL(t timing) time.Duration { return 8 * t.TTL }

// lossPercent is the share of packets the packet-loss family drops on
// every link of every server (a link between two servers carries both
// ends' rules, so it loses 1-(1-p)^2 of its packets: 36%). Measured
// under netns on zk-lib, etcd-mutex, redis-py, redsync and curator, 2
// runs each: at 10% the locks barely struggle (availability during the
// fault 36-79%, most runs notice nothing); at 20% they struggle
// (availability 9-62%, errors in 6 of 10 runs) and 4 of 5 cells still
// gather the visits a verdict needs; at 30% and 50% availability falls to
// 8-37% and 4 of 5 cells are inconclusive (too few visits in the window).
const lossPercent = 20

// packetLoss drops lossPercent of the packets on every link of every
// server: a loss only the kernel can inflict, never a proxy.
func packetLoss(t timing, l lockInfo) (setup, string) {
	if tr, _ := cluster.TraitsOf(t.Provider); !tr.PacketLinks {
		return notApplicable("a proxy carries bytes over TCP and never loses a packet: packet loss needs provider netns (chaos atlas --provider netns)")
	}
	return onEveryServer(l, func(n string) string {
		return fault("loss", t.at(), fmt.Sprintf("for: %s, node: %s, percent: %d", ms(t.long()), n, lossPercent))
	})
}

func partitionHolder(t timing, l lockInfo) (setup, string) {
	if !l.Renews && !l.RenewOption {
		return notApplicable("the lock does not renew its lease: a holder inside longer than the lease loses it with no fault (pause-holder-long is its holder fault)")
	}
	s, _ := usual(l, fault("partition", t.at(), "for: "+ms(t.long())+", isolate: holder"))
	s.CS = 3 * t.TTL
	s.Run = t.at() + t.long() + 2*t.TTL + s.CS
	s.Renew = true
	return s, ""
}

// clockFault is a clock fault (kind, with fields) aimed at the Redis
// primary, one Redlock node or the ZooKeeper leader while a holder is
// inside; a backend's row says when its clock cannot be moved (etcd: a Go
// program reads the vDSO), a provider's traits when its servers run
// without the clock shim.
func clockFault(t timing, l lockInfo, fields, kind string) (setup, string) {
	if b, ok := rowOf(l); ok && b.NoClock != "" {
		return notApplicable(b.NoClock)
	}
	if tr, _ := cluster.TraitsOf(t.Provider); !tr.Clock {
		return notApplicable("provider " + t.Provider + ": " + tr.NoClock)
	}
	s, _ := usual(l, aimedEarly(kind, t.at(), keyHeldCS(t), "node: "+leader(l)+", "+fields))
	s.CS = keyHeldCS(t)
	if l.Quorum {
		s.Control = oneOfThree
	}
	return s, ""
}

func restart(t timing, l lockInfo, persistence string) (setup, string) {
	if b, ok := rowOf(l); ok && b.Volatile && persistence == "none" {
		// Everything in memory: the restart of its first node loses the key.
		c, nodes := tableServers(b)
		return setup{Cluster: c, Faults: []string{aimedEarly("restart", t.at(), keyHeldCS(t), "node: "+nodes[0]+", delay: 0s")},
			CS: keyHeldCS(t)}, ""
	}
	if l.Backend != locks.Redis {
		return notApplicable(string(l.Backend) + " keeps its log on disk: a restart loses nothing it acknowledged")
	}
	c, _ := serversWith(l, persistence)
	s := setup{Cluster: c, Faults: []string{aimedEarly("restart", t.at(), keyHeldCS(t), "node: redis-0, delay: 0s")}, CS: keyHeldCS(t)}
	switch {
	case persistence == "always":
		s.Control = "appendfsync always: the node reloads the holder's key, so no second grant is possible"
	case l.Quorum:
		s.Control = oneOfThree
	}
	return s, ""
}

// keyHeldCS is the critical section of the families whose fault acts on
// the lock key on one node (a restart, a clock jump, a power cut): half
// the lease. The fault fires in its first third (aimedEarly), so the
// holder stays inside for a few hundred milliseconds after the server
// serves again without its key: long enough for the waiters, which ask
// again every quarter lease (acquire_timeout), to try the open race.
func keyHeldCS(t timing) time.Duration { return t.TTL / 2 }

// Sentinel timings (redis-failover explains them): the replica lags by
// failoverLag, longer than kill-to-promotion (about 2-3s), so the promoted
// replica lacks the holder's key; the holder stays inside failoverCS,
// across the promotion, under a lease of failoverTTL; the fault comes at
// failoverAt, after Sentinel's first INFO refreshes. A minority partition
// needs no lagging replica: it comes at cutAt, once a holder is inside
// (the cluster is ready only when every Sentinel knows the replica), and
// lasts cutFor: down-after (1s) and the election (2-3s), then time for
// both primaries to grant at once.
const (
	failoverLag = 5 * time.Second
	failoverCS  = 5 * time.Second
	failoverTTL = 6 * time.Second
	failoverAt  = 11 * time.Second
	failoverRun = 18 * time.Second
	cutAt       = 5 * time.Second
	cutFor      = 8 * time.Second
)

// sentinelTopology is the single-primary Redis topology behind Sentinel.
const sentinelTopology = "redis: {primaries: 1, replicas: 1, sentinels: 3, persistence: none}"

func killLeader(t timing, l lockInfo) (setup, string) {
	if l.Backend == locks.Redis && !l.Quorum {
		return setup{Cluster: sentinelTopology, Faults: []string{
			fault("latency", 0, "link: redis-0-r0->redis-0, latency: "+ms(failoverLag)),
			fault("failover", failoverAt, "node: redis-0"),
		}, Run: failoverRun, TTL: failoverTTL, CS: failoverCS}, ""
	}
	s, _ := usual(l, aimed("kill", t.at(), t.critical(), "node: "+leader(l)))
	if l.Quorum {
		s.Control = "a killed Redlock primary never returns: the holder's key stays on the other 2 of 3, a majority"
	}
	return s, ""
}

// minorityLeader cuts the leader into a minority. ZooKeeper and etcd: the
// leader alone, for 2.5 x ttl. Redis behind Sentinel: the primary with
// client-0, which keeps locking on the old primary (it accepts writes)
// while the majority's Sentinels promote its replica for the others.
func minorityLeader(t timing, l lockInfo) (setup, string) {
	switch {
	case l.Quorum:
		return notApplicable("independent Redis primaries elect no leader (kill-k-of-n is their quorum fault)")
	case l.Backend == locks.Redis:
		g := "groups: [[redis-0, client-0], [redis-0-r0, sentinel-0, sentinel-1, sentinel-2, client-1, client-2]]"
		return setup{Cluster: sentinelTopology,
			Faults: []string{fault("partition", cutAt, "for: "+ms(cutFor)+", "+g)},
			Run:    cutAt + cutFor + failoverTTL, TTL: failoverTTL, CS: failoverCS}, ""
	}
	_, ns := servers(l)
	g := fmt.Sprintf("groups: [[%s], [%s, clients]]", leader(l), strings.Join(ns, ", "))
	return usual(l, aimed("partition", t.at(), t.critical(), "for: "+ms(t.long())+", "+g))
}

// killK is the 2N+1 claim: k of n Redlock primaries killed; a quorum lock
// stays available iff k <= (n-1)/2.
func killK(k, n int) Family {
	return Family{
		Name: fmt.Sprintf("kill-%d-of-%d", k, n),
		Doc:  fmt.Sprintf("%d of %d Redlock primaries killed: available iff k <= N for 2N+1 = %d", k, n, n),
		Fault: func(t timing, l lockInfo) (setup, string) {
			if !l.Quorum {
				return notApplicable("the 2N+1 claim is about quorum locks over independent Redis primaries")
			}
			var fs []string
			for i := 0; i < k; i++ {
				fs = append(fs, fault("kill", t.at(), fmt.Sprintf("node: redis-%d", i)))
			}
			// Dead primaries never return, so a second grant needs a majority
			// among the survivors, which the holder's key already spans:
			// these cells measure availability (the 2N+1 claim), not safety.
			return setup{Cluster: fmt.Sprintf("redis: {primaries: %d, persistence: none}", n), Faults: fs,
				Control: "availability only: killed primaries never return, so no second majority can form"}, ""
		},
	}
}

// ControlOf says why family f is a control for lock l (not a safety
// claim), "" when it is a claim: the family's Control sentence, or its
// setup's.
func (f Family) ControlOf(t timing, l lockInfo) string {
	s, reason := f.Fault(t, l)
	switch {
	case reason != "" || len(s.Faults) == 0:
		return "" // not applicable, or the baseline: the no-fault claim
	case f.Control:
		return "a fault every lock that is correct without faults must ride out"
	}
	return s.Control
}

// Scenario returns the YAML scenario of family f for lock l at time scale
// t, or the reason f does not apply to l.
func (f Family) Scenario(t timing, l lockInfo) (yaml, reason string) {
	s, reason := f.Fault(t, l)
	if reason != "" {
		return "", reason
	}
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\n", ScenarioName(f.Name, l.Name))
	fmt.Fprintf(&b, "description: >\n  atlas family %s for %s: %s.\n", f.Name, l.Name, f.Doc)
	b.WriteString("seed: 1\n")
	provider := t.Provider
	if provider == "" {
		provider = cluster.ProviderLocal
	}
	fmt.Fprintf(&b, "cluster:\n  provider: %s\n  %s\n", provider, s.Cluster)
	var opts []string
	if s.Renew && !l.Renews && l.RenewOption {
		opts = append(opts, "renew: true")
	}
	if l.Kind == locks.KindSemaphore {
		opts = append(opts, fmt.Sprintf("permits: %d", atlasPermits))
	}
	lock := l.Name
	if len(opts) > 0 {
		lock = "{name: " + l.Name + ", " + strings.Join(opts, ", ") + "}"
	}
	fmt.Fprintf(&b, "locks: [%s]\n", lock)
	run, ttl, cs := t.at()+t.long()+2*t.TTL, t.TTL, t.critical()
	if s.Run > 0 {
		run = s.Run
	}
	if s.TTL > 0 {
		ttl = s.TTL
	}
	if s.CS > 0 {
		cs = s.CS
	}
	clients := 4
	if s.Clients > 0 {
		clients = s.Clients
	}
	if l.Kind == locks.KindSemaphore {
		clients += atlasPermits - 1
	}
	// Waiters give up after a quarter lease and ask again, as a tryLock
	// loop does: every waiter keeps sending requests while a race is open,
	// whatever its lock's own wait (a long backoff, a notification that
	// never comes), so an open race is tried, not waited out.
	fmt.Fprintf(&b, "workload:\n  clients: %d\n  duration: %s\n  ttl: %s\n  critical_section: %s\n  acquire_timeout: %s\n  process_per_client: true\n",
		clients, ms(run), ms(ttl), ms(cs), ms(ttl/4))
	if l.Kind == locks.KindRW {
		fmt.Fprintf(&b, "  read_share: %s\n", atlasReadShare)
	}
	if len(s.Faults) > 0 {
		b.WriteString("faults:\n")
		for _, f := range s.Faults {
			fmt.Fprintf(&b, "  - %s\n", f)
		}
	}
	b.WriteString("resource:\n  fencing: enforce\n")
	b.WriteString("expect:\n  default: {incidents: 0, lock_faults: 0}\n")
	return b.String(), ""
}

// ScenarioName is the name of the scenario of one cell.
func ScenarioName(family, lock string) string { return "atlas-" + family + "-" + lock }
