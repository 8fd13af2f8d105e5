package scenarios

import (
	"strings"
	"testing"
)

// TestKnownHaveReferences: every built-in known-<slug> scenario names
// where its failure was reported and states an expectation.
func TestKnownHaveReferences(t *testing.T) {
	n := 0
	for _, s := range Builtin() {
		if !strings.HasPrefix(s.Name, "known-") {
			continue
		}
		n++
		if len(s.References) == 0 {
			t.Errorf("%s: no references", s.Name)
		}
		if len(s.Expect) == 0 {
			t.Errorf("%s: no expect", s.Name)
		}
	}
	if n < 5 {
		t.Errorf("%d known-failure scenarios, want at least 5", n)
	}
}
