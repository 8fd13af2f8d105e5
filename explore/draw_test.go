package explore

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/backends/all"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/locks"
	_ "github.com/locklab/locklab/locks/all"
)

// TestDrawValid draws 1,000 schedules over every lock explore may judge
// and every drawable fault type: each must pass the scenario validator
// (Draw runs it), and every drawable type must be drawn.
func TestDrawValid(t *testing.T) {
	g := Generator{Seed: 7, Locks: atlas.Locks(), Types: Drawable()}
	seen, persistence := map[string]int{}, map[string]int{} // persistence: and Redis Cluster
	for i := range 1000 {
		s, err := g.Draw(i)
		if err != nil {
			t.Fatalf("%v\n%s", err, s.YAML())
		}
		if s.Persistence != "" {
			persistence[s.Persistence]++
		}
		if s.RedisMode != "" {
			persistence["mode "+s.RedisMode]++
		}
		if n := len(s.Faults); n > 4 {
			t.Fatalf("run %d: %d faults, want at most 4", i, n)
		}
		for _, f := range s.Faults {
			seen[f.Type]++
		}
	}
	for _, typ := range Drawable() {
		if seen[typ] == 0 {
			t.Errorf("fault type %s never drawn in 1,000 runs", typ)
		}
	}
	t.Logf("fault types drawn: %v", seen)
	for _, p := range []string{"none", "everysec", "always", "mode cluster"} {
		if persistence[p] == 0 {
			t.Errorf("Redis persistence or %s never drawn in 1,000 runs: %v", p, persistence)
		}
	}
}

func TestDrawDeterministic(t *testing.T) {
	g := Generator{Seed: 42, Locks: []string{"redis-cad", "redlock", "zk-recipe"}, Types: Drawable()}
	for i := range 50 {
		a, err := g.Draw(i)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := g.Draw(i)
		if !reflect.DeepEqual(a, b) || a.YAML() != b.YAML() {
			t.Fatalf("run %d drew two schedules from one seed:\n%s\n%s", i, a.YAML(), b.YAML())
		}
	}
	other := Generator{Seed: 43, Locks: g.Locks, Types: g.Types}
	same := 0
	for i := range 50 {
		a, _ := g.Draw(i)
		b, _ := other.Draw(i)
		if a.YAML() == strings.Replace(b.YAML(), "seed 43", "seed 42", 1) {
			same++
		}
	}
	if same > 5 {
		t.Errorf("seeds 42 and 43 drew %d identical schedules of 50", same)
	}
}

func TestDrawNoFaults(t *testing.T) {
	g := Generator{Seed: 1, Locks: []string{"redis-cad", "redlock"}}
	for i := range 100 {
		s, err := g.Draw(i)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Faults) != 0 {
			t.Fatalf("--faults none drew %v", s.Faults)
		}
	}
}

func TestBoundsDeclared(t *testing.T) {
	// Every drawable type's bounds name fields it takes.
	for _, name := range Drawable() {
		ft, _ := faults.Lookup(name)
		for _, b := range ft.Bounds {
			if b.Field != "at" && !contains(ft.Fields(), b.Field) {
				t.Errorf("%s: bound on %s, a field it does not take", name, b.Field)
			}
			if b.Min > b.Max {
				t.Errorf("%s: bound on %s: min %v > max %v", name, b.Field, b.Min, b.Max)
			}
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// TestDrawCoversPairs: the first len(locks) x len(types) draws take each
// (lock, fault type) pair once for their lock and first fault, where the
// type applies to the lock's topology.
func TestDrawCoversPairs(t *testing.T) {
	g := Generator{Seed: 7, Locks: []string{"redis-cad", "redlock", "zk-recipe", "etcd-recipe"}, Types: Drawable()}
	n := len(g.Locks) * len(g.Types)
	pairs := map[string]int{}
	missed := 0
	for i := range n {
		s, err := g.Draw(i)
		if err != nil {
			t.Fatal(err)
		}
		lock, typ := g.pair(i)
		if s.Lock != lock {
			t.Fatalf("run %d: lock %s, its pair says %s", i, s.Lock, lock)
		}
		pairs[lock+" "+typ]++
		first := ""
		for _, f := range s.Faults {
			if len(f.Groups) == 0 || f.Groups[0][0] != "client-0" && f.Groups[0][0] != "client-1" {
				first = f.Type // the first fault after a bare majority's cuts
				break
			}
		}
		if first != typ && slices.Contains(g.applicable(s), typ) {
			t.Errorf("run %d (%s): first fault %q, its pair's type %s applies", i, lock, first, typ)
		}
		if first != typ {
			missed++
		}
	}
	if len(pairs) != n {
		t.Errorf("%d draws took %d distinct pairs of %d", n, len(pairs), n)
	}
	t.Logf("%d pairs, %d whose type does not apply to the lock's topology", n, missed)
}

// TestDrawAimsAndBareMajorities: about half the drawn faults are aimed at
// a live holder, and a quorum lock's draws include Kleppmann's setting:
// two clients, each cut from two of five primaries for the whole run, a
// fault on the primary both majorities share.
func TestDrawAimsAndBareMajorities(t *testing.T) {
	g := Generator{Seed: 7, Locks: []string{"redlock", "redsync"}, Types: Drawable()}
	aimed, all, bare, onShared := 0, 0, 0, 0
	for i := range 300 {
		s, err := g.Draw(i)
		if err != nil {
			t.Fatal(err)
		}
		cut := map[string]bool{}
		for _, f := range s.Faults {
			if len(f.Groups) == 2 && (f.Groups[0][0] == "client-0" || f.Groups[0][0] == "client-1") {
				for _, n := range f.Groups[1] {
					cut[n] = true
				}
				continue
			}
			all++
			if f.Aimed() {
				aimed++
			}
		}
		if len(cut) == 0 {
			continue
		}
		bare++
		if len(cut) != 4 || s.Primaries != 5 || s.Clients != 2 {
			t.Fatalf("run %d: cuts from %v over %d primaries, %d clients", i, cut, s.Primaries, s.Clients)
		}
		for _, f := range s.Faults {
			if f.Node != "" && !cut[f.Node] {
				onShared++
				break
			}
		}
	}
	if aimed < all/3 || aimed > all*2/3 {
		t.Errorf("%d of %d faults aimed, want about half", aimed, all)
	}
	if bare < 50 || onShared < bare/4 {
		t.Errorf("%d of 300 draws bare majorities, %d of them with a fault on the shared primary", bare, onShared)
	}
	t.Logf("aimed %d/%d; bare majorities %d/300, %d with a fault on the shared primary", aimed, all, bare, onShared)
}

// TestDrawTableBackends: a lock of a backend drawn from its row (PostgreSQL,
// MariaDB, NATS; not Redis, whose topologies drawRedis draws) is drawn on
// its own backend's cluster, and its faults act on that cluster's nodes
// and links only.
func TestDrawTableBackends(t *testing.T) {
	var tableLocks []string
	for _, name := range atlas.Locks() {
		spec, _ := locks.Lookup(name)
		if _, ok := cluster.LookupBackend(string(spec.Backend)); ok && spec.Backend != locks.Redis {
			tableLocks = append(tableLocks, name)
		}
	}
	if len(tableLocks) < 3 {
		t.Fatalf("table backend locks %v: want pg-advisory, mariadb-get-lock, nats-kv and more", tableLocks)
	}
	for _, lock := range tableLocks {
		spec, _ := locks.Lookup(lock)
		g := Generator{Seed: 3, Locks: []string{lock}, Types: Drawable()}
		onServer := 0
		for i := range 100 {
			s, err := g.Draw(i)
			if err != nil {
				t.Fatalf("%s run %d: %v\n%s", lock, i, err, s.YAML())
			}
			if s.Backend != string(spec.Backend) || !strings.Contains(s.YAML(), "  "+s.Backend+": {") {
				t.Fatalf("%s run %d drawn on another cluster:\n%s", lock, i, s.YAML())
			}
			plan := cluster.PlanOf(clusterSpec(s))
			for _, f := range s.Faults {
				_, to, _ := strings.Cut(f.Link, "->")
				for _, name := range append([]string{f.Node, to}, slices.Concat(f.Groups...)...) {
					if name == "" || name == "holder" || name == "clients" || strings.HasSuffix(name, "-leader") {
						continue
					}
					if plan.Kind(name) == "" {
						t.Fatalf("%s run %d: fault %s names %q, not a node of the plan:\n%s", lock, i, f.Type, name, s.YAML())
					}
				}
				if f.Node != "" && plan.Kind(f.Node) != "" && slices.Contains([]string{faults.Kill, faults.Pause, faults.Restart}, f.Type) {
					onServer++
				}
			}
		}
		if onServer == 0 {
			t.Errorf("%s: no kill, pause or restart of its servers in 100 draws", lock)
		}
	}
}
