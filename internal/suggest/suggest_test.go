package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"abc", "abc", 0},
		{"redis-ca", "redis-cad", 1}, {"rnu", "run", 1}, {"kitten", "sitting", 3},
		{"ab", "ba", 1}, {"abcd", "acbd", 1}, {"zk-recipe", "etcd-recipe", 4},
	}
	for _, tt := range tests {
		t.Run(tt.a+"/"+tt.b, func(t *testing.T) {
			if got := distance(tt.a, tt.b); got != tt.want {
				t.Errorf("distance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
			}
		})
	}
}

func TestHint(t *testing.T) {
	locks := []string{"etcd-recipe", "redis-cad", "redis-py", "redis-reentrant", "redlock", "zk-recipe", "zk-lib"}
	verbs := []string{"run", "report", "check", "list", "calibrate", "cleanup", "validate", "show", "version", "help"}
	tests := []struct {
		name       string
		in         string
		candidates []string
		want       string
	}{
		{"one letter short", "redis-ca", locks, `; did you mean "redis-cad"?`},
		{"swapped letters", "rnu", verbs, `; did you mean "run"?`},
		{"case", "REDLOCK2", locks, `; did you mean "redlock"?`},
		{"two at the same distance", "zk-li", []string{"zk-lib", "zk-lid"}, `; did you mean "zk-lib" or "zk-lid"?`},
		{"unique prefix", "calib", verbs, `; did you mean "calibrate"?`},
		{"ambiguous prefix, nothing close", "redis-", []string{"redis-cad", "redis-py2"}, ""},
		{"nothing close", "frobnicate", verbs, ""},
		{"three edits in nine letters is not close", "redis-cad", []string{"redis-py"}, ""},
		{"exact name", "run", verbs, ""},
		{"short names need an exact letter", "xy", []string{"ab"}, ""},
		{"no candidates", "x", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Hint(tt.in, tt.candidates); got != tt.want {
				t.Errorf("Hint(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if got := Closest("zk-recipee", locks); !slices.Equal(got, []string{"zk-recipe"}) {
		t.Errorf("Closest = %q", got)
	}
}
