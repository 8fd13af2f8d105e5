package cluster_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/locklab/locklab/cluster"
	_ "github.com/locklab/locklab/cluster/providers/docker"
	_ "github.com/locklab/locklab/cluster/providers/netns"
)

// TestUnregisteredProvider: a provider no package registered fails Start
// before anything starts, naming the registered ones and where they come
// from; a second registration of a name panics.
func TestUnregisteredProvider(t *testing.T) {
	dir := t.TempDir()
	_, err := cluster.Start(context.Background(), cluster.Spec{Provider: "nosuch", Redis: &cluster.RedisSpec{}, Dir: dir})
	if err == nil || !errors.Is(err, cluster.ErrUnsupported) {
		t.Fatalf("Start with provider nosuch: %v, want ErrUnsupported", err)
	}
	for _, want := range []string{`"nosuch"`, "not registered", cluster.ProviderDocker, cluster.ProviderNetns, "cluster/providers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
		t.Errorf("Start made %v in its dir (%v); want nothing", ents, err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second registration of provider docker did not panic")
		}
	}()
	cluster.RegisterProvider(cluster.ProviderDocker, nil)
}
