package workload

import (
	"encoding/json"
	"testing"

	"github.com/locklab/locklab/locks"
)

// TestProgramEndpointsTable: a table backend's addresses go under its
// name, beside the built-in keys.
func TestProgramEndpointsTable(t *testing.T) {
	e := ProgramEndpointsOf(locks.Endpoints{Redis: []string{"127.0.0.1:1"},
		Table: map[string][]string{"postgres": {"127.0.0.1:2", "127.0.0.1:3"}, "nats": nil}})
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"postgres":["127.0.0.1:2","127.0.0.1:3"],"redis":["127.0.0.1:1"]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	b, _ = json.Marshal(ProgramEndpointsOf(locks.Endpoints{Table: map[string][]string{"etcd": {"a"}}}))
	if want := `{"etcd":["a"]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
