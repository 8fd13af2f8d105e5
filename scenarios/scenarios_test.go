package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locklab/locklab/checker"
	"github.com/locklab/locklab/cluster"
	redisrow "github.com/locklab/locklab/cluster/backends/redis"
	"github.com/locklab/locklab/cluster/backends/zookeeper"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/all" // the locks the built-in scenarios use
)

// Test-only lock specs under test-only names, so the error tests do not
// depend on what the real lock packages accept.
func init() {
	stub := func(context.Context, locks.Config) (locks.Client, error) { return nil, errors.New("test stub") }
	reg := func(s locks.Spec) {
		if _, ok := locks.Lookup(s.Name); !ok {
			s.New = stub
			locks.Register(s)
		}
	}
	replicas := func(v string) error {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return fmt.Errorf("want an integer >= 0, got %q", v)
		}
		return nil
	}
	reg(locks.Spec{Name: "test-lock", Backend: locks.Redis, MinRedis: 1, RedisCluster: true,
		Options: []locks.Option{{Name: "wait_replicas", Check: replicas}, {Name: "wait_timeout"}}})
	reg(locks.Spec{Name: "test-redlock", Backend: locks.Redis, MinRedis: 3})
	reg(locks.Spec{Name: "test-zk", Backend: locks.ZooKeeper})
	reg(locks.Spec{Name: "test-etcd", Backend: locks.Etcd})
	reg(locks.Spec{Name: "test-rw", Backend: locks.Redis, MinRedis: 1, Kind: locks.KindRW})
}

// badCase is one invalid file and the problem it must produce.
type badCase struct {
	name string
	src  string
	// want is the exact start of the problem: "x.yaml:LINE: FIELD: ".
	want string
	// msg must appear in the same problem.
	msg string
}

// checkBad parses each case's source as x.yaml and requires exactly one
// problem, starting with want and containing msg.
func checkBad(t *testing.T, cases []badCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recordBad(t, tc)
			s, err := Parse("x.yaml", []byte(tc.src))
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want an error starting %q", s, tc.want)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T is not *Error: %v", err, err)
			}
			if len(e.Problems) != 1 {
				t.Fatalf("want 1 problem, got %d:\n%v", len(e.Problems), err)
			}
			got := e.Problems[0].String()
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("problem\n  %s\ndoes not start with\n  %s", got, tc.want)
			}
			if !strings.Contains(got, tc.msg) {
				t.Errorf("problem\n  %s\ndoes not contain\n  %s", got, tc.msg)
			}
			if e.Problems[0].File != "x.yaml" {
				t.Errorf("File = %q", e.Problems[0].File)
			}
		})
	}
}

func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("x.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return s
}

func TestUnknownField(t *testing.T) {
	checkBad(t, []badCase{
		{"top level", "name: t\nlocks: [test-lock]\ndurration: 5s\n",
			"x.yaml:3: durration: ", "unknown field (allowed: name, description, references, seed, cluster, locks, workload, sweep, faults, resource, expect)"},
		{"workload", "name: t\nlocks: [test-lock]\nworkload:\n  clients: 2\n  durration: 5s\n",
			"x.yaml:5: workload.durration: ", "unknown field (allowed: clients, duration, ops, ttl, critical_section"},
		{"cluster.redis", "name: t\nlocks: [test-lock]\ncluster:\n  redis: {primary: 1}\n",
			"x.yaml:4: cluster.redis.primary: ", "unknown field (allowed: primaries, replicas"},
		{"lock option", "name: t\nlocks:\n  - {name: test-lock, wait_replica: 1}\n",
			"x.yaml:3: locks[0].wait_replica: ", "unknown field (allowed: name, ttl, retry, key, label, wait_replicas, wait_timeout)"},
		{"fault", "name: t\nlocks: [test-lock]\nfaults:\n  - type: kill\n    at: 1s\n    node: redis-0\n    nodee: x\n",
			"x.yaml:7: faults[0].nodee: ", "unknown field (allowed: type, at, when, after_enter, after_enter_max, node)"},
		{"field of another fault type", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: kill, at: 1s, node: redis-0, latency: 1s}\n",
			"x.yaml:4: faults[0].latency: ", "not a field of a kill fault (allowed: type, at, when, after_enter, after_enter_max, node)"},
		{"for on a fault that does not heal", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: kill, at: 1s, for: 2s, node: redis-0}\n",
			"x.yaml:4: faults[0].for: ", "does not heal"},
		{"expect", "name: t\nlocks: [test-lock]\nexpect:\n  test-lock: {violation: 0}\n",
			"x.yaml:4: expect.test-lock.violation: ", "unknown field (allowed: violations, stale_tokens"},
		{"sweep", "name: t\nlocks: [test-lock]\nsweep:\n  client: [1, 2]\n",
			"x.yaml:4: sweep.client: ", "unknown field (allowed: clients, faults[N].FIELD"},
		{"resource", "name: t\nlocks: [test-lock]\nresource: {fence: observe}\n",
			"x.yaml:3: resource.fence: ", "unknown field (allowed: fencing)"},
	})
}

func TestMalformedDuration(t *testing.T) {
	checkBad(t, []badCase{
		{"words", "name: t\nlocks: [test-lock]\nworkload:\n  duration: 10 seconds\n",
			"x.yaml:4: workload.duration: ", `"10 seconds" is not a duration (use e.g. 30s, 500ms, 2m)`},
		{"no unit", "name: t\nlocks: [test-lock]\nworkload:\n  ttl: 10\n",
			"x.yaml:4: workload.ttl: ", `"10" is not a duration`},
		{"a list", "name: t\nlocks: [test-lock]\nworkload:\n  critical_section: [1s]\n",
			"x.yaml:4: workload.critical_section: ", "must be a duration (use e.g. 30s, 500ms, 2m) (got a list)"},
		{"lock ttl", "name: t\nlocks:\n  - {name: test-lock, ttl: 5 s}\n",
			"x.yaml:3: locks[0].ttl: ", `"5 s" is not a duration`},
		{"fault at", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: kill, at: soon, node: redis-0}\n",
			"x.yaml:4: faults[0].at: ", `"soon" is not a duration`},
		{"negative", "name: t\nlocks: [test-lock]\nworkload:\n  critical_section: -1s\n",
			"x.yaml:4: workload.critical_section: ", "must be >= 0 (got -1s)"},
		{"sweep value", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: pause, at: 1s, node: redis-0}\nsweep:\n  faults[0].for: [1s, forever]\n",
			"x.yaml:6: sweep.faults[0].for[1]: ", `"forever" is not a duration`},
	})
}

func TestUnknownLock(t *testing.T) {
	checkBad(t, []badCase{
		{"flow list", "name: t\nlocks: [redis-foo]\n",
			"x.yaml:2: locks[0]: ", `unknown lock "redis-foo" (known: `},
		{"block list", "name: t\nlocks:\n  - test-lock\n  - test-zk\n  - redis-foo\n",
			"x.yaml:5: locks[2]: ", `unknown lock "redis-foo" (known: `},
		{"mapping", "name: t\nlocks:\n  - {name: redis-foo, ttl: 1s}\n",
			"x.yaml:3: locks[0].name: ", `unknown lock "redis-foo"`},
		{"expect for a lock not in locks", "name: t\nlocks: [test-lock]\nexpect:\n  test-zk: {violations: 0}\n",
			"x.yaml:4: expect.test-zk: ", `no lock or label "test-zk" in locks (known: default, test-lock)`},
		{"no locks", "name: t\nlocks: []\n",
			"x.yaml:2: locks: ", "needs at least one lock"},
		{"locks missing", "name: t\n",
			"x.yaml:1: locks: ", "required"},
	})
}

func TestNegativeCount(t *testing.T) {
	checkBad(t, []badCase{
		{"clients", "name: t\nlocks: [test-lock]\nworkload:\n  clients: -3\n",
			"x.yaml:4: workload.clients: ", "must be >= 1 (got -3)"},
		{"zero clients", "name: t\nlocks: [test-lock]\nworkload: {clients: 0}\n",
			"x.yaml:3: workload.clients: ", "must be >= 1 (got 0)"},
		{"not a number", "name: t\nlocks: [test-lock]\nworkload: {clients: many}\n",
			"x.yaml:3: workload.clients: ", `must be an integer (got "many")`},
		{"sweep clients", "name: t\nlocks: [test-lock]\nsweep:\n  clients: [1, -2]\n",
			"x.yaml:4: sweep.clients[1]: ", "must be >= 1 (got -2)"},
		{"replicas", "name: t\nlocks: [test-lock]\ncluster:\n  redis:\n    replicas: -1\n",
			"x.yaml:5: cluster.redis.replicas: ", "must be >= 0 (got -1)"},
		{"ensemble size", "name: t\nlocks: [test-zk]\ncluster:\n  zookeeper: {nodes: 2}\n",
			"x.yaml:4: cluster.zookeeper.nodes: ", "must be 1, 3 or 5 (got 2)"},
		{"ops", "name: t\nlocks: [test-lock]\nworkload: {ops: 0}\n",
			"x.yaml:3: workload.ops: ", "must be >= 1 (got 0)"},
	})
}

func TestMissingName(t *testing.T) {
	checkBad(t, []badCase{
		{"absent", "description: no name\nlocks: [test-lock]\n",
			"x.yaml:1: name: ", "required"},
		{"empty", "name: \"\"\nlocks: [test-lock]\n",
			"x.yaml:1: name: ", "must not be empty"},
		{"null", "name:\nlocks: [test-lock]\n",
			"x.yaml:1: name: ", "missing value"},
		{"bad characters", "name: Redis_Test\nlocks: [test-lock]\n",
			"x.yaml:1: name: ", `[a-z0-9-]+ (got "Redis_Test")`},
		{"lock without name", "name: t\nlocks:\n  - {ttl: 1s}\n",
			"x.yaml:3: locks[0].name: ", "required"},
		{"fault without type", "name: t\nlocks: [test-lock]\nfaults:\n  - {at: 1s, node: redis-0}\n",
			"x.yaml:4: faults[0].type: ", "required (one of bandwidth, blackhole, clock-drift, clock-jump, clock-strobe"},
		{"fault without at", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: kill, node: redis-0}\n",
			"x.yaml:4: faults[0].at: ", "required by a kill fault"},
	})
}

func TestBadFaultNode(t *testing.T) {
	const head = "name: t\nlocks: [test-lock]\nworkload: {clients: 4}\nfaults:\n"
	checkBad(t, []badCase{
		{"primary beyond the cluster", head + "  - {type: kill, at: 1s, node: redis-1}\n",
			"x.yaml:5: faults[0].node: ", `no node "redis-1" (nodes: redis-0, clients, client-0..client-3, holder)`},
		{"not a node name", head + "  - {type: pause, at: 1s, node: redis}\n",
			"x.yaml:5: faults[0].node: ", `no node "redis"`},
		{"client beyond clients", head + "  - {type: latency, at: 1s, node: client-4, latency: 1s}\n",
			"x.yaml:5: faults[0].node: ", `no node "client-4"`},
		{"link to a missing replica", head + "  - {type: latency, at: 1s, link: redis-0-r0->redis-0, latency: 1s}\n",
			"x.yaml:5: faults[0].link: ", `no node "redis-0-r0"`},
		{"link between unlinked nodes", "name: t\nlocks: [test-redlock]\nfaults:\n  - {type: reset, at: 1s, link: redis-0->redis-1}\n",
			"x.yaml:4: faults[0].link: ", "no link redis-0->redis-1 (links run from a client to a server"},
		{"link towards a client", head + "  - {type: reset, at: 1s, link: redis-0->clients}\n",
			"x.yaml:5: faults[0].link: ", "links from a client are written client->server"},
		{"replication link backwards", "name: t\nlocks: [test-lock]\ncluster: {redis: {replicas: 1}}\nfaults:\n  - {type: latency, at: 1s, link: redis-0->redis-0-r0, latency: 1s}\n",
			"x.yaml:5: faults[0].link: ", "the replication link is redis-0-r0->redis-0"},
		{"sentinel link backwards", "name: t\nlocks: [test-lock]\ncluster: {redis: {sentinels: 3}}\nfaults:\n  - {type: latency, at: 1s, link: redis-0->sentinel-0, latency: 1s}\n",
			"x.yaml:5: faults[0].link: ", "Redis servers never dial sentinels; Sentinel's connections are sentinel-0->redis-0"},
		{"replication across master groups", "name: t\nlocks: [test-lock]\ncluster: {redis: {primaries: 2, replicas: 1, sentinels: 3}}\nfaults:\n  - {type: latency, at: 1s, link: redis-1-r0->redis-0, latency: 1s}\n",
			"x.yaml:5: faults[0].link: ", "no link redis-1-r0->redis-0 (links run from a client to a server"},
		{"redis-peers without peer addresses", "name: t\nlocks: [test-redlock]\nfaults:\n  - {type: reset, at: 1s, link: redis-peers->redis-0}\n",
			"x.yaml:4: faults[0].link: ", "redis-peers links exist to the Redis nodes of a topology with replicas or sentinels"},
		{"redis-peers in a group", "name: t\nlocks: [test-lock]\ncluster: {redis: {replicas: 1}}\nfaults:\n  - {type: partition, at: 1s, groups: [[redis-peers], [redis-0]]}\n",
			"x.yaml:5: faults[0].groups[0][0]: ", `"redis-peers" is not one of`},
		{"etcd member to itself", "name: t\nlocks: [test-etcd]\ncluster: {etcd: {nodes: 3}}\nfaults:\n  - {type: reset, at: 1s, link: etcd-1->etcd-1}\n",
			"x.yaml:5: faults[0].link: ", "no link etcd-1->etcd-1"},
		{"leader without the backend", head + "  - {type: kill, at: 1s, node: zk-leader}\n",
			"x.yaml:5: faults[0].node: ", `no node "zk-leader" (nodes: redis-0, clients, client-0..client-3, holder)`},
		{"leader selector of another kind", "name: t\nlocks: [test-lock, test-zk]\ncluster: {redis: {replicas: 1, sentinels: 3}}\nfaults:\n  - {type: failover, at: 1s, node: zk-leader}\n",
			"x.yaml:5: faults[0].node: ", `"zk-leader" is not one of redis-N`},
		{"leader link to itself", "name: t\nlocks: [test-zk]\ncluster: {zookeeper: {nodes: 3}}\nfaults:\n  - {type: reset, at: 1s, link: zk-leader->zk-leader}\n",
			"x.yaml:5: faults[0].link: ", "a link from zk-leader to itself"},
		{"leader group left empty", "name: t\nlocks: [test-zk]\ncluster: {zookeeper: {nodes: 3}}\nfaults:\n  - {type: partition, at: 1s, groups: [[zk-leader], [zk-1]]}\n",
			"x.yaml:5: faults[0].groups: ", "when zk-1 leads: group 1 is empty"},
		{"leader twice", "name: t\nlocks: [test-zk]\ncluster: {zookeeper: {nodes: 3}}\nfaults:\n  - {type: partition, at: 1s, groups: [[zk-leader], [zk-leader, clients]]}\n",
			"x.yaml:5: faults[0].groups[1][0]: ", "zk-leader is already in groups[0]"},
		{"not a link", head + "  - {type: reset, at: 1s, link: clients-redis-0}\n",
			"x.yaml:5: faults[0].link: ", "is not a link: write A->B"},
		{"waiters in a node", head + "  - {type: latency, at: 1s, node: waiters, latency: 1s}\n",
			"x.yaml:5: faults[0].node: ", "waiters stands for every client but the holder, so only a partition's groups may name it"},
		{"waiters isolated", head + "  - {type: partition, at: 1s, isolate: waiters}\n",
			"x.yaml:5: faults[0].isolate: ", "only a partition's groups may name it"},
		{"waiters of one client", "name: t\nlocks: [test-lock]\nworkload: {clients: 1}\nfaults:\n  - {type: partition, at: 1s, groups: [[waiters], [redis-0]]}\n",
			"x.yaml:5: faults[0].groups: ", "waiters needs a second client: workload.clients is 1"},
		{"kill a client", head + "  - {type: kill, at: 1s, node: clients}\n",
			"x.yaml:5: faults[0].node: ", `"clients" is not one of redis-N (a kill fault acts on redis nodes)`},
		{"clock-jump on etcd", "name: t\nlocks: [test-lock, test-etcd]\nfaults:\n  - {type: clock-jump, at: 1s, node: etcd-0, offset: 5s}\n",
			"x.yaml:4: faults[0].node: ", `clock faults cannot act on "etcd-0": etcd is a Go program`},
		{"clock-drift rate 1", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: clock-drift, at: 1s, node: redis-0, rate: 1}\n",
			"x.yaml:4: faults[0].rate: ", "must not be 1"},
		{"clock-drift rate not a number", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: clock-drift, at: 1s, node: redis-0, rate: fast}\n",
			"x.yaml:4: faults[0].rate: ", "must be a number"},
		{"clock-jump offset 0", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: clock-jump, at: 1s, node: redis-0, offset: 0s}\n",
			"x.yaml:4: faults[0].offset: ", "must not be 0"},
		{"failover without sentinels", "name: t\nlocks: [test-lock]\ncluster:\n  redis: {replicas: 1}\nfaults:\n  - {type: failover, at: 1s, node: redis-0}\n",
			"x.yaml:6: faults[0].node: ", "failover needs Sentinel"},
		{"redis cluster of 2 primaries", "name: t\nlocks: [test-lock]\ncluster:\n  redis: {mode: cluster, primaries: 2}\n",
			"x.yaml:4: cluster.redis.primaries: ", "mode cluster needs at least 3 primaries"},
		{"redis cluster with sentinels", "name: t\nlocks: [test-lock]\ncluster:\n  redis:\n    mode: cluster\n    sentinels: 3\n",
			"x.yaml:6: cluster.redis.sentinels: ", "must be 0 with mode cluster"},
		{"redis cluster under netns", "name: t\nlocks: [test-lock]\ncluster:\n  provider: netns\n  redis:\n    mode: cluster\n",
			"x.yaml:6: cluster.redis.mode: ", "cluster is not supported by provider netns yet"},
		{"redis cluster under docker", "name: t\nlocks: [test-lock]\ncluster:\n  provider: docker\n  redis: {mode: cluster}\n",
			"x.yaml:5: cluster.redis.mode: ", "cluster is not supported by provider docker yet"},
		{"redis cluster mode unknown", "name: t\nlocks: [test-lock]\ncluster:\n  redis: {mode: sharded}\n",
			"x.yaml:4: cluster.redis.mode: ", ""},
		{"quorum lock on a redis cluster", "name: t\nlocks:\n  - test-lock\n  - test-redlock\ncluster:\n  redis: {mode: cluster}\n",
			"x.yaml:4: locks[1]: ", "lock test-redlock cannot run on a Redis Cluster"},
		{"client program on a redis cluster", "name: t\nlocks:\n  - {name: exec, backend: redis, command: [python3, c.py]}\ncluster:\n  redis: {mode: cluster}\n",
			"x.yaml:3: locks[0]: ", "lock exec cannot run on a Redis Cluster (cluster.redis.mode: cluster): client programs"},
		{"wait_replicas on a redis cluster", "name: t\nlocks:\n  - {name: test-lock, wait_replicas: 1}\ncluster:\n  redis: {mode: cluster, replicas: 1}\n",
			"x.yaml:3: locks[0].wait_replicas: ", "not supported on a Redis Cluster"},
		{"redis cluster failover without replicas", "name: t\nlocks: [test-lock]\ncluster:\n  redis: {mode: cluster}\nfaults:\n  - {type: failover, at: 1s, node: redis-0}\n",
			"x.yaml:6: faults[0].node: ", "failover needs a replica of redis-0"},
		{"failover on a replica", "name: t\nlocks: [test-lock]\ncluster:\n  redis: {replicas: 1, sentinels: 3}\nfaults:\n  - {type: failover, at: 1s, node: redis-0-r0}\n",
			"x.yaml:6: faults[0].node: ", `"redis-0-r0" is not one of redis-N`},
		{"partition member", head + "  - type: partition\n    at: 1s\n    groups:\n      - [clients]\n      - [redis-0, zk-0]\n",
			"x.yaml:9: faults[0].groups[1][1]: ", `no node "zk-0"`},
		{"partition that cuts nothing", "name: t\nlocks: [test-redlock]\nfaults:\n  - {type: partition, at: 1s, groups: [[redis-0], [redis-1, redis-2]]}\n",
			"x.yaml:4: faults[0].groups: ", "cuts nothing"},
		{"pause-client index", head + "  - {type: pause-client, at: 1s, for: 1s, client: 4}\n",
			"x.yaml:5: faults[0].client: ", "no client 4 (clients are 0..3)"},
		{"client swept below the fault's client", "name: t\nlocks: [test-lock]\nworkload: {clients: 8}\nsweep:\n  clients: [2, 8]\nfaults:\n  - {type: reset, at: 1s, node: client-3}\n",
			"x.yaml:7: faults[0].node: ", `no node "client-3"`},
		{"swept node", head + "  - {type: kill, at: 1s, node: redis-0}\nsweep:\n  faults[0].node: [redis-0, redis-2]\n",
			"x.yaml:7: sweep.faults[0].node[1]: ", `no node "redis-2"`},
		{"unknown fault type", head + "  - {type: explode, at: 1s, node: redis-0}\n",
			"x.yaml:5: faults[0].type: ", `unknown fault type "explode" (known: ` + strings.Join(faults.Types(), ", ") + ")"},
		{"external: server fault", "name: t\nlocks: [test-lock]\ncluster:\n  provider: external\n  external: {redis: [\"10.0.0.1:6379\"]}\nfaults:\n  - {type: kill, at: 1s, node: redis-0}\n",
			"x.yaml:7: faults[0].type: ", "not possible with provider external"},
		{"external: link between servers", "name: t\nlocks: [test-redlock]\ncluster:\n  provider: external\n  external: {redis: [\"a:1\", \"b:2\", \"c:3\"]}\nfaults:\n  - {type: latency, at: 1s, link: redis-1->redis-0, latency: 1s}\n",
			"x.yaml:7: faults[0].link: ", "with provider external only client links exist"},
		{"external: peers in different groups", "name: t\nlocks: [test-zk]\ncluster:\n  provider: external\n  external: {zookeeper: [\"a:1\", \"b:2\", \"c:3\"]}\nfaults:\n  - {type: partition, at: 1s, groups: [[clients, zk-0], [zk-1, zk-2]]}\n",
			"x.yaml:7: faults[0].groups: ", "their peer traffic is not proxied"},
		{"at after the end", "name: t\nlocks: [test-lock]\nworkload: {duration: 5s}\nfaults:\n  - {type: kill, at: 5s, node: redis-0}\n",
			"x.yaml:5: faults[0].at: ", "not before the workload ends"},
	})
}

func TestBadCondition(t *testing.T) {
	const head = "name: t\nlocks: [test-lock]\nexpect:\n"
	checkBad(t, []badCase{
		{"word", head + "  test-lock: {violations: some}\n",
			"x.yaml:4: expect.test-lock.violations: ", `"some" is not a condition (use 0, N, ">0"`},
		{"bad number", head + "  default: {errors: \">x\"}\n",
			"x.yaml:4: expect.default.errors: ", `">x" is not a condition`},
		{"negative", head + "  default: {lost_updates: -1}\n",
			"x.yaml:4: expect.default.lost_updates: ", `"-1" is not a condition`},
		{"never holds", head + "  default: {violations: \"<0\"}\n",
			"x.yaml:4: expect.default.violations: ", "can never hold"},
		{"a list", head + "  default:\n    violations: [0]\n",
			"x.yaml:5: expect.default.violations: ", "must be a condition"},
		{"rejection without enforce", head + "  default: {stale_rejected: \">0\"}\n",
			"x.yaml:4: expect.default.stale_rejected: ", "only rejected with resource.fencing: enforce"},
	})
}

func TestYAMLSyntaxError(t *testing.T) {
	checkBad(t, []badCase{
		{"bad indentation", "name: t\nlocks: [test-lock]\nworkload:\n  clients: 1\n   ttl: 1s\n",
			"x.yaml:5: yaml: ", "mapping values are not allowed"},
		{"tab", "name: t\nlocks: [test-lock]\n\tworkload: {}\n",
			"x.yaml:3: ", "a tab character: YAML indentation must use spaces"},
		{"tab in a nested mapping", "name: t\nlocks: [test-lock]\nworkload:\n  clients: 2\n\tduration: 5s\n",
			"x.yaml:5: ", "a tab character: YAML indentation must use spaces"},
		{"escape without a line from yaml", "name: t\nlocks: [test-lock]\ndescription: \"a \\q\"\n",
			"x.yaml:3: yaml: ", "found unknown escape character"},
		{"unknown anchor", "name: t\nlocks: *nope\n",
			"x.yaml:2: yaml: ", "unknown anchor 'nope' referenced"},
		{"second document", "name: t\nlocks: [test-lock]\n---\nname: u\n",
			"x.yaml:4: ", "a second YAML document"},
		{"alias cycle", "name: t\nlocks: &a [test-lock, *a]\n",
			"x.yaml:2: ", "refers to a node that contains it"},
		{"not a mapping", "- name: t\n",
			"x.yaml:1: ", "a scenario is a mapping"},
		{"empty", "",
			"x.yaml:1: ", "empty scenario"},
		{"duplicate key", "name: t\nlocks: [test-lock]\nname: u\n",
			"x.yaml:3: name: ", "duplicate field"},
	})
}

func TestCrossChecks(t *testing.T) {
	checkBad(t, []badCase{
		{"too few primaries for redlock", "name: t\nlocks: [test-redlock]\ncluster:\n  redis: {primaries: 1}\n",
			"x.yaml:4: cluster.redis.primaries: ", "lock test-redlock needs at least 3 independent primaries (got 1)"},
		{"external without endpoints for a backend", "name: t\nlocks: [test-lock, test-zk]\ncluster:\n  provider: external\n  external: {redis: [\"10.0.0.1:6379\"]}\n",
			"x.yaml:2: cluster.external.zookeeper: ", "lock test-zk needs zookeeper servers"},
		{"external section with local provider", "name: t\nlocks: [test-lock]\ncluster:\n  external: {redis: [\"10.0.0.1:6379\"]}\n",
			"x.yaml:4: cluster.external: ", "only used with provider: external"},
		{"bad endpoint", "name: t\nlocks: [test-lock]\ncluster:\n  provider: external\n  external:\n    redis: [redis.example]\n",
			"x.yaml:6: cluster.external.redis[0]: ", "is not host:port"},
		{"duration and ops", "name: t\nlocks: [test-lock]\nworkload:\n  duration: 5s\n  ops: 100\n",
			"x.yaml:5: workload.ops: ", "set duration or ops, not both"},
		{"open without rate", "name: t\nlocks: [test-lock]\nworkload: {mode: open}\n",
			"x.yaml:3: workload.mode: ", "open needs rate"},
		{"rate in closed mode", "name: t\nlocks: [test-lock]\nworkload: {rate: 10}\n",
			"x.yaml:3: workload.rate: ", "only used with mode: open"},
		{"same lock twice", "name: t\nlocks: [test-lock, test-lock]\n",
			"x.yaml:2: locks[1]: ", "same lock and options as locks[0]"},
		{"label taken", "name: t\nlocks:\n  - test-lock\n  - {name: test-zk, label: test-lock}\n",
			"x.yaml:4: locks[1]: ", `label "test-lock" is already used by locks[0]`},
		{"bad option value", "name: t\nlocks:\n  - {name: test-lock, wait_replicas: many}\n",
			"x.yaml:3: locks[0].wait_replicas: ", `want an integer >= 0, got "many"`},
		{"sweep of a missing fault", "name: t\nlocks: [test-lock]\nsweep:\n  faults[1].for: [1s]\nfaults:\n  - {type: pause, at: 1s, node: redis-0}\n",
			"x.yaml:4: sweep.faults[1].for: ", "no fault 1 (faults has 1 entries)"},
		{"sweep of a field the fault lacks", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: kill, at: 1s, node: redis-0}\nsweep:\n  faults[0].for: [1s]\n",
			"x.yaml:6: sweep.faults[0].for: ", "a kill fault has no field for"},
		{"sweep too big", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: pause, at: 1s, node: redis-0}\nsweep:\n" +
			"  clients: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n  faults[0].for: [1s, 2s, 3s, 4s, 5s, 6s, 7s, 8s, 9s, 10s]\n  faults[0].at: [1s, 2s, 3s, 4s, 5s, 6s, 7s, 8s, 9s, 0s]\n",
			"x.yaml:5: sweep: ", "more than 1000 runs per lock"},
		{"latency required", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: latency, at: 1s, link: clients->redis-0}\n",
			"x.yaml:4: faults[0].latency: ", "required by a latency fault"},
		{"link and node", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: reset, at: 1s, link: clients->redis-0, node: redis-0}\n",
			"x.yaml:4: faults[0].node: ", "set link or node, not both"},
	})
}

// TestAllProblems checks that one file with several problems reports them
// all, in line order.
func TestAllProblems(t *testing.T) {
	src := `name: T
locks: [test-lock, redis-foo]
workload:
  clients: -1
  duration: 3 s
faults:
  - {type: kill, at: 1s, node: redis-7}
expect:
  test-lock: {violations: lots}
`
	_, err := Parse("x.yaml", []byte(src))
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error, got %v", err)
	}
	var got []string
	for _, p := range e.Problems {
		got = append(got, fmt.Sprintf("%d %s", p.Line, p.Field))
	}
	want := []string{"1 name", "2 locks[1]", "4 workload.clients", "5 workload.duration", "7 faults[0].node", "9 expect.test-lock.violations"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%v\nwant lines and fields %v", err, want)
	}
	if n := strings.Count(err.Error(), "\n"); n != len(want)-1 {
		t.Errorf("Error() has %d lines, want one per problem:\n%v", n+1, err)
	}
}

// designExample is the reference example scenario, verbatim: files written
// from the design alone must load.
const designExample = `name: redis-failover                 # [a-z0-9-]+, required
description: >                       # shown in reports
  Sentinel promotes a replica that never received the lock key.
seed: 42                             # every random choice derives from it
cluster:
  provider: local                    # local | docker | external
  redis: {primaries: 1, replicas: 1, sentinels: 3, persistence: none}   # none|everysec|always
  zookeeper: {nodes: 3}
  etcd: {nodes: 3}
  # external: {redis: [host:port], zookeeper: [...], etcd: [...]}
locks:                               # each runs in turn on a fresh cluster
  - redis-cad
  - {name: redis-watchdog, ttl: 5s}
workload:
  clients: 4
  duration: 30s                      # or ops: N
  ttl: 10s                           # default lease for every lock
  critical_section: 2s               # time spent inside the resource while holding
  keys: 1                            # distinct lock names; 1 = one contended lock
  mode: closed                       # closed | open (then rate: ops/s, coordinated-omission safe)
  process_per_client: false          # true: each client its own OS process
sweep:                               # optional, bench: one run per value
  clients: [1, 4, 16, 64]
faults:
  - {at: 5s, for: 20s, type: latency, link: redis-0-r0->redis-0, latency: 3s, jitter: 0s}
  - {at: 8s, type: kill, node: redis-0}
  - {at: 12s, for: 3s, type: pause-client, client: holder}
resource:
  fencing: observe                   # off | observe (count what fencing would reject) | enforce
expect:                              # chaos: checked, exit 1 when not met
  redis-cad: {violations: ">0"}
  default: {violations: 0}
`

func TestDesignExample(t *testing.T) {
	s := mustParse(t, designExample)
	if s.Name != "redis-failover" || s.Seed != 42 || len(s.Locks) != 2 || s.Locks[1].TTL != 5*time.Second {
		t.Errorf("scenario %+v", s)
	}
	if r := s.Cluster.Redis; r.Primaries != 1 || r.Replicas != 1 || r.Sentinels != 3 {
		t.Errorf("redis %+v", r)
	}
	if !s.Workload.ProcessPerClient {
		t.Error("pause-client did not imply process_per_client")
	}
	if len(s.Faults) != 3 || s.Faults[0].Link != "redis-0-r0->redis-0" || s.Faults[0].Latency != 3*time.Second {
		t.Errorf("faults %+v", s.Faults)
	}
	if e, _ := s.ExpectFor(s.Locks[0]); e.Violations != ">0" {
		t.Errorf("redis-cad expects %+v", e)
	}
	if e, _ := s.ExpectFor(s.Locks[1]); e.Violations != "0" {
		t.Errorf("redis-watchdog expects %+v", e)
	}
	if got := len(s.Expand()); got != 4 {
		t.Errorf("Expand gave %d runs, want one per sweep.clients value", got)
	}
}

// parseFromRow parses a fault of type typ written from its row of the
// fault table alone (a node of the first kind it accepts, its required
// values at their examples), for types TestValidFaults does not write out.
func parseFromRow(t *testing.T, typ string) {
	t.Helper()
	ft, _ := faults.Lookup(typ)
	f := "{type: " + typ + ", at: 1s"
	if ft.Heals {
		f += ", for: 1s"
	}
	node := "redis-0"
	if kinds := cluster.KindsActedOnBy(typ); ft.Target == faults.OnServer && len(kinds) > 0 {
		node = map[string]string{cluster.KindRedis: "redis-0", cluster.KindReplica: "redis-0-r0", cluster.KindSentinel: "sentinel-0",
			zookeeper.Kind: "zk-0", "etcd": "etcd-0"}[kinds[0]]
	}
	switch ft.Target {
	case faults.OnLinkOrNode, faults.OnServer:
		f += ", node: " + node
	case faults.OnPartition:
		f += ", isolate: redis-0"
	case faults.OnClient:
		f += ", client: holder"
	}
	for _, v := range ft.Values {
		if v.Required {
			f += ", " + v.Name + ": " + v.Example
		}
	}
	provider := "local"
	if ft.Netns {
		provider = "netns"
	}
	s := mustParse(t, "name: t\nlocks: [test-lock]\ncluster: {provider: "+provider+", redis: {replicas: 1, sentinels: 1}}\nfaults:\n  - "+f+"}\n")
	if len(s.Faults) != 1 || s.Faults[0].Type != typ {
		t.Errorf("%s written from its row: %+v", typ, s.Faults)
	}
}

// TestValidFaults loads one fault of every type, each in a form the
// cluster can perform.
func TestValidFaults(t *testing.T) {
	s := mustParse(t, `name: t
locks: [test-lock, test-zk, test-etcd]
cluster:
  redis: {replicas: 1, sentinels: 3, persistence: everysec}
  zookeeper: {nodes: 3}
  etcd: {nodes: 3}
workload: {clients: 4, duration: 30s}
faults:
  - {type: latency, at: 1s, for: 2s, link: redis-0-r0->redis-0, latency: 3s, jitter: 100ms}
  - {type: latency, at: 1s, link: holder->redis-0, latency: 1s}
  - {type: bandwidth, at: 1s, node: client-3, rate_kbps: 64}
  - {type: partition, at: 1s, for: 5s, groups: [[clients, redis-0-r0], [redis-0]]}
  - {type: partition, at: 1s, isolate: zk-0}
  - {type: partition, at: 1s, groups: [[etcd-0], [etcd-1], [etcd-2]]}
  - {type: partition, at: 1s, groups: [[etcd-0, etcd-1], [etcd-2, clients]]}
  - {type: partition, at: 1s, isolate: etcd-leader}
  - {type: partition, at: 1s, groups: [[zk-leader, zk-0], [zk-1, zk-2, clients]]}
  - {type: partition, at: 1s, isolate: client-2}
  - {type: partition, at: 1s, for: 3s, groups: [[waiters], [etcd-0, etcd-1, etcd-2, holder]]}
  - {type: latency, at: 1s, link: etcd-1->etcd-0, latency: 1s}
  - {type: latency, at: 1s, link: clients->etcd-leader, latency: 1s}
  - {type: latency, at: 1s, link: zk-leader->zk-2, latency: 1s}
  - {type: pause, at: 1s, for: 1s, node: zk-leader}
  - {type: reset, at: 1s, link: etcd-peers->etcd-1}
  - {type: reset, at: 1s, link: zk-1->zk-0}
  - {type: reset, at: 1s, node: redis-0}
  - {type: pause, at: 2s, for: 1s, node: sentinel-1}
  - {type: latency, at: 1s, link: sentinel-0->redis-0, latency: 1s}
  - {type: latency, at: 1s, link: sentinel-0->sentinel-2, latency: 1s}
  - {type: latency, at: 1s, link: redis-peers->redis-0-r0, latency: 1s}
  - {type: reset, at: 1s, node: sentinel-2}
  - {type: reset, at: 1s, link: redis-0->redis-0-r0}
  - {type: partition, at: 1s, isolate: redis-0}
  - {type: partition, at: 1s, isolate: sentinel-0}
  - {type: partition, at: 1s, groups: [[redis-0], [sentinel-0, sentinel-1, sentinel-2, redis-0-r0, clients]]}
  - {type: partition, at: 1s, groups: [[redis-0, sentinel-0], [sentinel-1, sentinel-2, redis-0-r0, clients]]}
  - {type: kill, at: 3s, node: etcd-2}
  - {type: restart, at: 4s, node: redis-0, delay: 1s}
  - {type: failover, at: 5s, node: redis-0}
  - {type: pause-client, at: 6s, for: 2s, client: 3}
  - {type: clock-jump, at: 7s, node: redis-0-r0, offset: 30s}
`)
	// The packet faults exist under provider netns only.
	netns := mustParse(t, `name: t
locks: [test-lock, test-zk]
cluster:
  provider: netns
  redis: {replicas: 1}
  zookeeper: {nodes: 3}
workload: {clients: 4, duration: 30s}
faults:
  - {type: loss, at: 1s, for: 2s, node: redis-0, percent: 20}
  - {type: blackhole, at: 1s, for: 2s, link: clients->zk-0}
  - {type: partition, at: 1s, for: 2s, isolate: zk-leader, direction: out}
  - {type: reset, at: 1s, link: zk-1->zk-0}
`)
	var types []string
	for _, f := range append(s.Faults, netns.Faults...) {
		types = append(types, f.Type)
	}
	for _, typ := range faults.Types() {
		if !slices.Contains(types, typ) {
			parseFromRow(t, typ)
		}
	}
	ext := mustParse(t, `name: t
locks: [test-lock]
cluster:
  provider: external
  external: {redis: ["10.0.0.1:6379"]}
workload: {clients: 2}
faults:
  - {type: latency, at: 1s, link: clients->redis-0, latency: 1s}
  - {type: bandwidth, at: 1s, node: client-1, rate_kbps: 8}
  - {type: reset, at: 1s, node: redis-0}
  - {type: partition, at: 1s, groups: [[client-0], [redis-0]]}
  - {type: pause-client, at: 1s, client: holder}
`)
	if len(ext.Faults) != 5 || !ext.Workload.ProcessPerClient {
		t.Errorf("external: %+v", ext)
	}
}

func TestDefaults(t *testing.T) {
	s := mustParse(t, "name: t\nlocks: [test-lock]\n")
	want := &Scenario{
		Name: "t",
		Seed: 1,
		Cluster: Cluster{
			Provider: "local",
			Redis:    &cluster.RedisSpec{Primaries: 1, Persistence: "none"},
		},
		Locks: []Lock{{Name: "test-lock", Label: "test-lock", TTL: 10 * time.Second, Line: 2}},
		Workload: Workload{
			Clients: 1, Duration: 10 * time.Second, TTL: 10 * time.Second, Keys: 1,
			Mode: "closed", AcquireTimeout: 20 * time.Second,
		},
		Resource: Resource{Fencing: "off"},
		File:     "x.yaml",
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got\n%+v\nwant\n%+v", s, want)
	}
}

func TestBackendDefaults(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		check func(*Scenario) string
	}{
		{"zookeeper lock adds a single node", "name: t\nlocks: [test-zk]\n", func(s *Scenario) string {
			zk, _ := cluster.LookupBackend("zookeeper")
			if set, ok := s.Cluster.Backends["zookeeper"]; !ok || zk.Int(set, "nodes") != 1 || s.Cluster.Redis != nil {
				return fmt.Sprintf("cluster %+v", s.Cluster)
			}
			return ""
		}},
		{"etcd section keeps its size", "name: t\nlocks: [test-etcd]\ncluster: {etcd: {nodes: 3}}\n", func(s *Scenario) string {
			if s.Cluster.Backends["etcd"]["nodes"] != 3 {
				return fmt.Sprintf("etcd %+v", s.Cluster.Backends["etcd"])
			}
			return ""
		}},
		{"redlock gets the primaries it needs", "name: t\nlocks: [test-lock, test-redlock]\ncluster: {redis: {sentinels: 0}}\n", func(s *Scenario) string {
			if s.Cluster.Redis.Primaries != 3 {
				return fmt.Sprintf("redis %+v", s.Cluster.Redis)
			}
			return ""
		}},
		{"pause-client sets process_per_client", "name: t\nlocks: [test-lock]\nfaults:\n  - {type: pause-client, at: 1s, for: 2s, client: client-0}\n", func(s *Scenario) string {
			if !s.Workload.ProcessPerClient || s.Faults[0].Client != "0" {
				return fmt.Sprintf("workload %+v, fault %+v", s.Workload, s.Faults[0])
			}
			return ""
		}},
		{"acquire timeout follows the longest ttl", "name: t\nlocks: [{name: test-lock, ttl: 30s}]\nworkload: {ttl: 1s}\n", func(s *Scenario) string {
			if s.Workload.AcquireTimeout != 60*time.Second || s.Locks[0].TTL != 30*time.Second {
				return fmt.Sprintf("workload %+v, lock %+v", s.Workload, s.Locks[0])
			}
			return ""
		}},
		{"ops replaces duration", "name: t\nlocks: [test-lock]\nworkload: {ops: 500}\n", func(s *Scenario) string {
			if s.Workload.Ops != 500 || s.Workload.Duration != 0 {
				return fmt.Sprintf("workload %+v", s.Workload)
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if msg := tt.check(mustParse(t, tt.src)); msg != "" {
				t.Error(msg)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	s := mustParse(t, `name: t
locks:
  - test-lock
  - {name: test-lock, wait_replicas: 1, ttl: 2s}
  - {name: test-lock, wait_replicas: 1, label: cautious}
  - test-zk
expect:
  test-lock: {violations: ">0"}
  "test-lock ttl=2s wait_replicas=1": {violations: 0}
  cautious: {errors: "<= 5"}
  default: {violations: 0, lost_updates: 0}
`)
	var got []string
	for _, l := range s.Locks {
		got = append(got, l.Label)
	}
	want := []string{"test-lock", "test-lock ttl=2s wait_replicas=1", "cautious", "test-zk"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("labels %q, want %q", got, want)
	}
	if o := s.Locks[1].Options; o["wait_replicas"] != "1" || len(o) != 1 {
		t.Errorf("options %v", o)
	}
	for i, want := range []Expect{
		{Violations: ">0", LostUpdates: "0"},
		{Violations: "0", LostUpdates: "0"},
		{Violations: ">0", LostUpdates: "0", Errors: "<=5"},
		{Violations: "0", LostUpdates: "0"},
	} {
		got, ok := s.ExpectFor(s.Locks[i])
		got.Line = 0
		if !ok || got != want {
			t.Errorf("ExpectFor(%s) = %+v, %v; want %+v", s.Locks[i].Label, got, ok, want)
		}
	}
}

func TestCondition(t *testing.T) {
	tests := []struct {
		in       string
		canon    string
		hold, no []int
	}{
		{"0", "0", []int{0}, []int{1}},
		{"3", "3", []int{3}, []int{2, 4}},
		{"==2", "2", []int{2}, []int{0}},
		{">0", ">0", []int{1, 9}, []int{0}},
		{" >= 3 ", ">=3", []int{3, 4}, []int{2}},
		{"<10", "<10", []int{0, 9}, []int{10}},
		{"<=1", "<=1", []int{0, 1}, []int{2}},
	}
	for _, tt := range tests {
		c, err := ParseCondition(tt.in)
		if err != nil {
			t.Errorf("ParseCondition(%q): %v", tt.in, err)
			continue
		}
		if c.String() != tt.canon {
			t.Errorf("ParseCondition(%q).String() = %q, want %q", tt.in, c, tt.canon)
		}
		for _, v := range tt.hold {
			if !c.Check(v) {
				t.Errorf("%q.Check(%d) = false", tt.in, v)
			}
		}
		for _, v := range tt.no {
			if c.Check(v) {
				t.Errorf("%q.Check(%d) = true", tt.in, v)
			}
		}
	}
	for _, bad := range []string{"", ">", "x", "-1", ">-1", "<0", "1.5", "!=3", "+3"} {
		if _, err := ParseCondition(bad); err == nil {
			t.Errorf("ParseCondition(%q) succeeded", bad)
		}
	}
	e := Expect{Violations: "0", Errors: ">0"}
	if got := e.Unmet(Counts{SafetyFigures: checker.SafetyFigures{Violations: 2}}); !reflect.DeepEqual(got, []string{"violations: got 2, want 0", "errors: got 0, want >0"}) {
		t.Errorf("Unmet = %q", got)
	}
	if got := e.Unmet(Counts{Errors: 1}); got != nil {
		t.Errorf("Unmet = %q, want nil", got)
	}
}

func TestSweep(t *testing.T) {
	s := mustParse(t, `name: t
locks: [test-lock]
workload: {clients: 2}
faults:
  - {type: pause, at: 1s, node: redis-0}
  - {type: latency, at: 2s, link: clients -> redis-0}
sweep:
  clients: [1, 4]
  faults[0].for: [1s, 5s]
  "faults[1].latency": [10ms, 100ms, 1s]
`)
	if c := mustParse(t, "name: t\nlocks: [test-lock]\nworkload: {clients: 4}\nfaults:\n  - {type: pause-client, at: 1s, client: 0}\nsweep:\n  faults[0].client: [client-1, 2, holder]\n"); !reflect.DeepEqual(c.Sweep.Params[0].Values, []string{"1", "2", "holder"}) {
		t.Errorf("client sweep values %q", c.Sweep.Params[0].Values)
	}
	if s.Faults[1].Link != "clients->redis-0" {
		t.Errorf("link %q", s.Faults[1].Link)
	}
	wantSweep := &Sweep{Clients: []int{1, 4}, Params: []SweepParam{
		{Fault: 0, Field: "for", Values: []string{"1s", "5s"}, Line: 9},
		{Fault: 1, Field: "latency", Values: []string{"10ms", "100ms", "1s"}, Line: 10},
	}}
	if !reflect.DeepEqual(s.Sweep, wantSweep) {
		t.Errorf("sweep %+v, want %+v", s.Sweep, wantSweep)
	}
	runs := s.Expand()
	if len(runs) != 12 {
		t.Fatalf("Expand gave %d runs, want 12", len(runs))
	}
	last := runs[11]
	if last.Variant != "clients=4 faults[0].for=5s faults[1].latency=1s" || last.Workload.Clients != 4 ||
		last.Faults[0].For != 5*time.Second || last.Faults[1].Latency != time.Second || last.Sweep != nil {
		t.Errorf("last run: %q %+v %+v", last.Variant, last.Workload, last.Faults)
	}
	if runs[1].Variant != "clients=1 faults[0].for=1s faults[1].latency=100ms" {
		t.Errorf("second run %q", runs[1].Variant)
	}
	if s.Faults[0].For != 0 || s.Sweep == nil {
		t.Error("Expand changed the scenario it expanded")
	}
	if one := mustParse(t, "name: t\nlocks: [test-lock]\n").Expand(); len(one) != 1 || one[0].Variant != "" {
		t.Errorf("Expand without a sweep: %+v", one)
	}
}

func TestAnchorsAndMerge(t *testing.T) {
	s := mustParse(t, `name: t
locks: [test-lock]
workload: {clients: 3}
faults:
  - &pause {type: pause, at: 1s, for: 2s, node: redis-0}
  - {<<: *pause, node: client-2, type: reset, at: 3s}
`)
	want := []Fault{
		{Type: "pause", At: time.Second, For: 2 * time.Second, Node: "redis-0", Line: 5},
		{Type: "reset", At: 3 * time.Second, For: 2 * time.Second, Node: "client-2", Line: 6},
	}
	if !reflect.DeepEqual(s.Faults, want) {
		t.Errorf("faults %+v, want %+v", s.Faults, want)
	}
}

func TestBuiltin(t *testing.T) {
	names := BuiltinNames()
	for _, want := range []string{"redis-baseline", "redis-long-critical-section"} {
		if !slices.Contains(names, want) {
			t.Errorf("BuiltinNames() = %v, missing %s", names, want)
		}
	}
	all := Builtin()
	if len(all) != len(names) {
		t.Fatalf("Builtin() gave %d scenarios for %d names", len(all), len(names))
	}
	for i, s := range all {
		t.Run(names[i], func(t *testing.T) {
			if s.Name != names[i] {
				t.Errorf("name %q in file %s.yaml", s.Name, names[i])
			}
			if len(s.Description) < 40 {
				t.Errorf("description %q does not say what the scenario shows", s.Description)
			}
			if s.File != "builtin:"+names[i] {
				t.Errorf("File %q", s.File)
			}
			for _, l := range s.Locks {
				if _, ok := locks.Lookup(l.Name); !ok {
					t.Errorf("lock %s is not registered", l.Name)
				}
			}
			// The tests run in scenarios/, so name.yaml is the file on
			// disk; the other two resolve to the embedded copy.
			for _, arg := range []string{names[i], names[i] + ".yaml", "scenarios/" + names[i] + ".yaml"} {
				r, err := Resolve(arg)
				if err != nil {
					t.Errorf("Resolve(%q): %v", arg, err)
					continue
				}
				c := *r
				c.File = s.File
				if !reflect.DeepEqual(&c, s) {
					t.Errorf("Resolve(%q) differs from Builtin", arg)
				}
			}
			if r, err := Resolve(filepath.Join(t.TempDir(), names[i]+".yaml")); err == nil {
				t.Errorf("Resolve of a missing file outside a scenarios dir found %s", r.File)
			}
		})
	}
}

func TestBuiltinExpectations(t *testing.T) {
	var s *Scenario
	for _, b := range Builtin() {
		if b.Name == "redis-long-critical-section" {
			s = b
		}
	}
	if s == nil {
		t.Fatal("redis-long-critical-section missing")
	}
	if s.Workload.CriticalSection <= s.Workload.TTL {
		t.Errorf("critical section %s is not longer than ttl %s", s.Workload.CriticalSection, s.Workload.TTL)
	}
	want := map[string]string{"redis-set-del": ">0", "redis-cad": ">0", "redis-watchdog": "0", "redis-reentrant": "0"}
	for name, cond := range want {
		if got := s.Expect[name].Violations; got != cond {
			t.Errorf("expect %s violations %q, want %q", name, got, cond)
		}
	}
}

func TestResolveFile(t *testing.T) {
	dir := t.TempDir()
	// A file on disk wins over the built-in of the same name.
	path := filepath.Join(dir, "redis-baseline.yaml")
	if err := os.WriteFile(path, []byte("name: mine\nlocks: [test-lock]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Resolve(path)
	if err != nil || s.Name != "mine" || s.File != path {
		t.Fatalf("Resolve(%s) = %+v, %v", path, s, err)
	}
	if _, err := Resolve("no-such-scenario"); err == nil || !strings.Contains(err.Error(), "redis-baseline") {
		t.Errorf("Resolve of an unknown name: %v (want the built-in names listed)", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: t\nlocks: [test-lock]\nworkload: {clients: -1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(bad)
	var e *Error
	if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), bad+":3: workload.clients: ") {
		t.Errorf("Resolve(bad) = %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range BuiltinNames() {
		data, err := builtinFS.ReadFile(name + ".yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"name: t\nlocks: [test-lock]\nsweep: {clients: [1, 2], \"faults[0].at\": [1s]}\nfaults: [{type: partition, at: 0s, groups: [[clients], [redis-0]]}]\n",
		"name: t\nlocks: &a [test-lock, *a]\n",
		"a: &a [*a, *a]\nb: &b [*a, *a]\nc: [*b, *b]\n",
		"name: t\nlocks: [{<<: {name: test-zk}}]\nexpect: {default: {violations: \">=1\"}}\n",
		"name: t\nlocks: [test-redlock]\ncluster: {provider: external, external: {redis: [\"a:1\", \"b:2\", \"c:3\"]}}\nfaults: [{type: pause-client, at: 1s, client: holder}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(e.Problems) == 0 {
				t.Fatalf("error without problems: %v", err)
			}
			return
		}
		if s.Name == "" || len(s.Locks) == 0 {
			t.Fatalf("valid scenario without name or locks: %+v", s)
		}
		_ = s.Expand()
		for _, l := range s.Locks {
			s.ExpectFor(l)
		}
	})
}

// TestDockerEtcdPairs: docker builds etcd peer links per directed pair, so
// member-to-member links and one-member isolation are valid there.
func TestDockerEtcdPairs(t *testing.T) {
	for _, f := range []string{
		"{type: reset, at: 1s, link: etcd-0->etcd-1}",
		"{type: partition, at: 1s, groups: [[etcd-0, etcd-1], [etcd-2]]}",
		"{type: partition, at: 1s, isolate: etcd-leader}",
	} {
		src := "name: t\nlocks: [etcd-recipe]\ncluster: {provider: docker, etcd: {nodes: 3}}\nfaults:\n  - " + f + "\n"
		if _, err := Parse("x.yaml", []byte(src)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestReadShare: read_share takes a share from 0 to 1, and only read-write
// locks take it; the error names the file, line and field.
func TestReadShare(t *testing.T) {
	checkBad(t, []badCase{
		{"on a mutex", "name: t\nlocks: [test-rw, test-lock]\nworkload:\n  read_share: 0.5\n",
			"x.yaml:4: workload.read_share: ", "needs read-write locks (kind rw), but test-lock (line 2) is a mutex"},
		{"above 1", "name: t\nlocks: [test-rw]\nworkload:\n  read_share: 1.5\n",
			"x.yaml:4: workload.read_share: ", "must be from 0 to 1"},
		{"not a number", "name: t\nlocks: [test-rw]\nworkload:\n  read_share: half\n",
			"x.yaml:4: workload.read_share: ", "a number"},
	})
	s, err := Parse("x.yaml", []byte("name: t\nlocks: [test-rw]\nworkload:\n  read_share: 0.9\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Workload.ReadShare != 0.9 {
		t.Errorf("read_share = %v, want 0.9", s.Workload.ReadShare)
	}
}

// TestRedisClusterFailoverSlot: the lock key of redis-cluster-failover
// (the default prefix locklab:<scenario>: and the one lock name lock-0)
// hashes to a slot of the primary its failover kills, else the fault would
// not touch the lock.
func TestRedisClusterFailoverSlot(t *testing.T) {
	s, err := Resolve("redis-cluster-failover")
	if err != nil {
		t.Fatal(err)
	}
	r := s.Cluster.Redis
	if r == nil || r.Mode != cluster.RedisCluster || s.Workload.Keys != 1 {
		t.Fatalf("cluster %+v, keys %d: want one key on a Redis Cluster", r, s.Workload.Keys)
	}
	var node string
	for _, f := range s.Faults {
		if f.Type == "failover" {
			node = f.Node
		}
	}
	i, err := strconv.Atoi(strings.TrimPrefix(node, "redis-"))
	if err != nil {
		t.Fatalf("failover of %q: want a primary redis-N", node)
	}
	key := "locklab:" + s.Name + ":lock-0"
	slot := redisrow.KeySlot(key)
	if lo, hi := redisrow.SlotRange(i, r.Primaries); slot < lo || slot > hi {
		t.Errorf("%s hashes to slot %d, not one of %s's (%d-%d)", key, slot, node, lo, hi)
	}
}

// TestRedisMode: mode defaults to standalone, and a cluster without
// primaries: gets 3.
func TestRedisMode(t *testing.T) {
	s := mustParse(t, "name: t\nlocks: [test-lock]\ncluster:\n  redis: {replicas: 1}\n")
	if r := s.Cluster.Redis; r.Mode != cluster.RedisStandalone || r.Primaries != 1 {
		t.Errorf("standalone: mode %q, primaries %d", r.Mode, r.Primaries)
	}
	s = mustParse(t, "name: t\nlocks: [test-lock]\ncluster:\n  redis: {mode: cluster, replicas: 1}\n")
	if r := s.Cluster.Redis; r.Mode != cluster.RedisCluster || r.Primaries != 3 || r.Sentinels != 0 {
		t.Errorf("cluster: mode %q, primaries %d, sentinels %d", r.Mode, r.Primaries, r.Sentinels)
	}
	if !cluster.PlanOf(s.ClusterSpec(1)).RedisCluster {
		t.Error("plan of a cluster scenario is not a Redis Cluster")
	}
}
