package scenarios

import (
	"strings"
	"testing"
)

func TestKeyPerClient(t *testing.T) {
	s, err := Parse("k.yaml", []byte("name: k\nlocks: [test-lock]\nworkload: {clients: 4, key_per_client: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Workload.KeyPerClient {
		t.Error("key_per_client: true not parsed")
	}
	_, err = Parse("k.yaml", []byte("name: k\nlocks: [test-lock]\nworkload:\n  key_per_client: maybe\n"))
	if err == nil || !strings.Contains(err.Error(), "k.yaml:4") || !strings.Contains(err.Error(), "workload.key_per_client") {
		t.Errorf("bad key_per_client: %v, want an error naming k.yaml:4 and the field", err)
	}
}
