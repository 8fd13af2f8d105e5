package cli

import (
	"strings"
	"testing"
)

func TestExecLocks(t *testing.T) {
	for _, c := range []struct {
		f    AtlasFlags
		want string // error; "" for none
		n    int
	}{
		{AtlasFlags{}, "", 0},
		{AtlasFlags{Exec: []string{"mine=python3 c.py"}, Backend: "redis"}, "", 1},
		{AtlasFlags{Exec: []string{"a=x", "b=y"}, Backend: "etcd"}, "", 2},
		{AtlasFlags{Exec: []string{"mine=python3 c.py"}}, "--exec needs --backend", 0},
		{AtlasFlags{Backend: "redis"}, "give --exec NAME='CMD ARGS' too", 0},
		{AtlasFlags{Exec: []string{"python3 c.py"}, Backend: "redis"}, "want NAME=CMD ARGS", 0},
		{AtlasFlags{Exec: []string{"mine=x"}, Backend: "mysql"}, "--backend must be redis, zookeeper or etcd", 0},
	} {
		got, err := execLocks(c.f)
		if c.want == "" && (err != nil || len(got) != c.n) {
			t.Errorf("%+v: %v, %d programs; want %d", c.f, err, len(got), c.n)
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want an error containing %q", c.f, err, c.want)
		}
	}
}
