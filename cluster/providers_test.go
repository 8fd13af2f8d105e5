package cluster_test

import (
	"context"
	"errors"
	"os"
	"slices"
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
	cluster.RegisterProvider(cluster.ProviderDocker, cluster.Traits{}, nil)
}

// TestProviderTraits: the plan and the checks follow a provider's
// registered traits, not its name: a provider registered here with packet
// links (as netns) gets netns's plan, no proxies, every client link kept;
// one without lossy disks or the clock shim is refused a power cut with
// its own reason, and the message names the providers that can.
func TestProviderTraits(t *testing.T) {
	const name = "traits-test"
	cluster.RegisterProvider(name, cluster.Traits{PacketLinks: true, NoLossyDisks: "its disks are elsewhere"}, nil)
	if tr, ok := cluster.TraitsOf(name); !ok || !tr.PacketLinks || tr.Clock || tr.LossyDisks {
		t.Fatalf("TraitsOf(%s) = %+v, %v", name, tr, ok)
	}
	spec := func(prov string) cluster.Spec {
		return cluster.Spec{Provider: prov, Redis: &cluster.RedisSpec{Replicas: 1},
			Backends: map[string]cluster.Settings{"etcd": {"nodes": 3}}, Clients: 2, ClientProxies: []string{}}
	}
	want, got := planLinks(cluster.PlanOf(spec(cluster.ProviderNetns))), planLinks(cluster.PlanOf(spec(name)))
	if !slices.Equal(got, want) || slices.ContainsFunc(got, func(l string) bool { return strings.Contains(l, "peers->") }) {
		t.Errorf("plan of a packet-links provider: links %v, want netns's %v", got, want)
	}
	if local := planLinks(cluster.PlanOf(spec(cluster.ProviderLocal))); slices.Equal(local, want) {
		t.Errorf("local's plan is netns's (%v): the test shows nothing", local)
	}

	err := cluster.LossyDisksWith(name)
	if err == nil || !strings.Contains(err.Error(), "its disks are elsewhere") || !strings.Contains(err.Error(), "local or netns") {
		t.Errorf("LossyDisksWith(%s) = %v, want its reason and the providers that can", name, err)
	}
	for prov, can := range map[string]bool{cluster.ProviderLocal: true, cluster.ProviderNetns: true,
		cluster.ProviderDocker: false, cluster.ProviderExternal: false} {
		if err := cluster.LossyDisksWith(prov); (err == nil) != can {
			t.Errorf("LossyDisksWith(%s) = %v", prov, err)
		}
	}
	if got := cluster.ProvidersWith(func(t cluster.Traits) bool { return t.Clock }); !slices.Equal(got, []string{"local", "netns"}) {
		t.Errorf("providers with the clock shim: %v", got)
	}
	_, err = cluster.Start(context.Background(), cluster.Spec{Provider: name, Redis: &cluster.RedisSpec{}, LossyDisks: true, Dir: t.TempDir()})
	if !errors.Is(err, cluster.ErrUnsupported) || !strings.Contains(err.Error(), "its disks are elsewhere") {
		t.Errorf("Start with lossy disks on %s: %v", name, err)
	}
}
