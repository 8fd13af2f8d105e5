package testenv

import (
	"testing"

	"github.com/locklab/locklab/cluster"
)

// External starts a cluster of provider external on the servers addrs of
// table backend backend, with the credentials env sets (LOCKLAB_*
// variables; every other credential variable is cleared for the test), so
// that its Endpoints carry what a run on servers the user runs hands its
// clients. Like t.Setenv it cannot run in a parallel test.
func External(t testing.TB, backend string, addrs []string, env map[string]string) *cluster.Cluster {
	t.Helper()
	for _, k := range cluster.CredentialEnv() {
		t.Setenv(k, env[k])
	}
	return Cluster(t, cluster.Spec{Provider: cluster.ProviderExternal, Clients: 1,
		External: &cluster.ExternalSpec{Table: map[string][]string{backend: addrs}}})
}
