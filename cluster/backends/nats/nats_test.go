package nats_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	natsserver "github.com/locklab/locklab/cluster/backends/nats"
	"github.com/locklab/locklab/testenv"
)

func TestRender(t *testing.T) {
	single := natsserver.Render(natsserver.Node{Name: "nats-0", Client: "127.0.0.1:1", Cluster: "127.0.0.1:2", Monitor: "127.0.0.1:3", StoreDir: "/d"})
	for _, want := range []string{`server_name: "nats-0"`, `listen: "127.0.0.1:1"`, `http: "127.0.0.1:3"`, `store_dir: "/d"`} {
		if !strings.Contains(single, want) {
			t.Errorf("single node config lacks %s:\n%s", want, single)
		}
	}
	if strings.Contains(single, "cluster") || strings.Contains(single, "authorization") {
		t.Errorf("single node config has a cluster or authorization block:\n%s", single)
	}
	for _, tc := range []struct {
		node natsserver.Node
		want string
	}{
		{natsserver.Node{User: "app", Password: `p"w`}, "authorization {\n  user: \"app\"\n  password: \"p\\\"w\"\n}\n"},
		{natsserver.Node{Token: "t0k"}, "authorization {\n  token: \"t0k\"\n}\n"},
	} {
		if got := natsserver.Render(tc.node); !strings.Contains(got, tc.want) {
			t.Errorf("config lacks %q:\n%s", tc.want, got)
		}
	}
	clustered := natsserver.Render(natsserver.Node{Name: "nats-1", Cluster: "127.0.0.1:2", Routes: []string{"127.0.0.1:7", "127.0.0.1:8"}, Advertise: "127.0.0.1:9"})
	for _, want := range []string{`listen: "127.0.0.1:2"`, `"nats-route://127.0.0.1:7"`, `"nats-route://127.0.0.1:8"`, `advertise: "127.0.0.1:9"`, "no_advertise: true", `name: "locklab"`} {
		if !strings.Contains(clustered, want) {
			t.Errorf("clustered config lacks %s:\n%s", want, clustered)
		}
	}
}

func TestValidNodes(t *testing.T) {
	for n, ok := range map[int]bool{0: false, 1: true, 2: false, 3: true, 4: false, 5: true, 7: false} {
		if err := natsserver.ValidNodes(n); (err == nil) != ok {
			t.Errorf("ValidNodes(%d) = %v", n, err)
		}
	}
	if got := strings.Join(natsserver.Names(3), ","); got != "nats-0,nats-1,nats-2" {
		t.Errorf("Names(3) = %s", got)
	}
}

func TestRacyExpectedRevision(t *testing.T) {
	for v, racy := range map[string]bool{"2.9.10": true, "v2.9.20": true, "2.9.21": false, "2.10.0": false, "2.11.3-beta": false, "1.4.0": true, "x": false} {
		if got := natsserver.RacyExpectedRevision(v); got != racy {
			t.Errorf("RacyExpectedRevision(%q) = %v, want %v", v, got, racy)
		}
	}
}

// TestRoles starts three nodes, creates a replicated KV bucket and checks
// that every node names the same leader of its stream, and that once that
// leader is killed the other two elect one of themselves.
func TestRoles(t *testing.T) {
	s := testenv.NATS(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	v, err := natsserver.Version(ctx, s.Monitors[0])
	if err != nil || v == "" {
		t.Fatalf("version %q: %v", v, err)
	}
	nc, err := natsgo.Connect(strings.Join(s.Clients, ","))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "roles", Replicas: 3, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	leader := agreedLeader(t, s.Monitors, "")
	killed := -1
	for i := range s.Monitors {
		if natsserver.NodeName(i) == leader {
			killed = i
		}
	}
	if killed < 0 {
		t.Fatalf("leader %q is no node of the cluster", leader)
	}
	s.Kill(killed)
	var rest []string
	for i, m := range s.Monitors {
		if i != killed {
			rest = append(rest, m)
		}
	}
	if next := agreedLeader(t, rest, leader); next == leader {
		t.Errorf("leader still %s after it was killed", next)
	}
}

// agreedLeader waits until every node at monitors names the same leader of
// the KV stream, other than not, and returns it.
func agreedLeader(t *testing.T, monitors []string, not string) string {
	t.Helper()
	var leader string
	testenv.Eventually(t, 60*time.Second, "nodes agree on the KV stream's leader", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		seen := map[string]bool{}
		for _, m := range monitors {
			r, err := natsserver.QueryRoles(ctx, m)
			if err != nil {
				return err
			}
			if r.Streams["KV_roles"] == "" {
				return fmt.Errorf("%s: no leader of KV_roles yet (%v)", m, r.Streams)
			}
			seen[r.KVLeader()] = true
			leader = r.KVLeader()
		}
		if len(seen) != 1 || leader == not {
			return fmt.Errorf("leaders named: %v", seen)
		}
		return nil
	})
	return leader
}
