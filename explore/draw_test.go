package explore

import (
	"reflect"
	"strings"
	"testing"

	"github.com/locklab/locklab/atlas"
	"github.com/locklab/locklab/faults"
	_ "github.com/locklab/locklab/locks/all"
)

// TestDrawValid draws 1,000 schedules over every lock explore may judge
// and every drawable fault type: each must pass the scenario validator
// (Draw runs it), and every drawable type must be drawn.
func TestDrawValid(t *testing.T) {
	g := Generator{Seed: 7, Locks: atlas.Locks(), Types: Drawable()}
	seen := map[string]int{}
	for i := range 1000 {
		s, err := g.Draw(i)
		if err != nil {
			t.Fatalf("%v\n%s", err, s.YAML())
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
