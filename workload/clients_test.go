package workload

import (
	"slices"
	"testing"
	"time"
)

// TestShare: a worker process gets one client, its share of the ops (the
// first ones one more; -1 when none is left) and of the rate, and no
// duration.
func TestShare(t *testing.T) {
	cfg := Config{Clients: 3, Ops: 4, Rate: 30, Duration: time.Second}
	var ops []int
	for i := range 3 {
		w := cfg.share(i)
		if w.Clients != 1 || w.Rate != 10 || w.Duration != 0 {
			t.Errorf("share(%d) = %+v", i, w)
		}
		ops = append(ops, w.Ops)
	}
	if !slices.Equal(ops, []int{2, 1, 1}) {
		t.Errorf("ops %v, want [2 1 1]", ops)
	}
	if w := (Config{Clients: 2, Ops: 1}).share(1); w.Ops != -1 {
		t.Errorf("a worker without ops got %d, want -1", w.Ops)
	}
}
