package cli

import (
	"errors"

	"github.com/locklab/locklab/atlas"
)

// execLocks reads chaos atlas's --exec values on --backend.
func execLocks(f AtlasFlags) ([]atlas.ExecLock, error) {
	if len(f.Exec) == 0 {
		if f.Backend != "" {
			return nil, errors.New("--backend names the servers of --exec programs: give --exec NAME='CMD ARGS' too")
		}
		return nil, nil
	}
	if f.Backend == "" {
		return nil, errors.New("--exec needs --backend redis, zookeeper or etcd: the servers the program uses")
	}
	var out []atlas.ExecLock
	for _, s := range f.Exec {
		e, err := atlas.ParseExec(s, f.Backend)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}
