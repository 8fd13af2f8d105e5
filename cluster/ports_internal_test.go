package cluster

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPortTaken makes the first port handed to a server one that another
// process holds: Start must notice the bind failure and use new ports.
func TestPortTaken(t *testing.T) {
	for _, tc := range []struct {
		name string
		bin  string
		spec Spec
	}{
		{"redis", "redis-server", Spec{Redis: &RedisSpec{Replicas: 1}}},
		{"etcd", "etcd", Spec{Etcd: &EtcdSpec{Nodes: 3}}},
		{"zookeeper", "java", Spec{ZooKeeper: &ZooKeeperSpec{Nodes: 3}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if testing.Short() {
				t.Skip("needs real servers")
			}
			if _, err := exec.LookPath(tc.bin); err != nil {
				// testenv.RequireBinaries would import this package; same
				// policy: fail in CI, skip elsewhere.
				if ci := strings.ToLower(os.Getenv("CI")); ci == "true" || ci == "1" {
					t.Fatal(tc.bin + " not found on PATH (run `make deps`)")
				}
				t.Skip(tc.bin + " not installed")
			}
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			takenPort := taken.Addr().(*net.TCPAddr).Port
			first := true
			pickPorts = func(n int) ([]int, error) {
				ps, err := freePorts(n)
				if err == nil && first {
					first = false
					ps[0] = takenPort
				}
				return ps, err
			}
			defer func() { pickPorts = freePorts }()

			tc.spec.Dir = t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := Start(ctx, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, n := range c.Nodes() {
				if n.Addr() == hostPort(takenPort) {
					t.Errorf("%s on the taken port %d", n.Name, takenPort)
				}
				if !n.Alive() {
					t.Errorf("%s not alive", n.Name)
				}
			}
			t.Logf("started around taken port %s in %v", strconv.Itoa(takenPort), c.Info().Startup)
		})
	}
}
