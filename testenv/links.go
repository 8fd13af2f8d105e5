package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/locklab/locklab/cluster"
)

// CutClient cuts every link of client i (no byte passes either way) and
// fails the test when it cannot.
func CutClient(t testing.TB, c *cluster.Cluster, i int) {
	t.Helper()
	links, err := c.Links(fmt.Sprintf("client-%d", i))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range links {
		if err := l.Cut(); err != nil {
			t.Fatal(err)
		}
	}
}

// HealClient heals every link of client i, bounded in time.
func HealClient(t testing.TB, c *cluster.Cluster, i int) {
	t.Helper()
	links, err := c.Links(fmt.Sprintf("client-%d", i))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, l := range links {
		if err := l.Heal(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
