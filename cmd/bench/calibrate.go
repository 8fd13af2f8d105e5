package main

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/locklab/locklab/calibrate"
	"github.com/locklab/locklab/cmd/internal/cli"
)

// calibrateCmd parses bench calibrate's flags; package calibrate measures.
func calibrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.FlagSet("bench calibrate", stderr, `Usage: bench calibrate [flags]

Measures in one run, each backend on freshly started local servers:
  mem        the harness's ceiling: the in-process lock, 8 clients, zero critical
             section (critical sections/s; ns of harness per critical section);
  redis      redis-benchmark's raw rate for redis-cad's own commands against the
             harness's redis-cad and a bare Go client sending the same commands,
             directly and through the client proxies (interleaved rounds,
             medians); hand-off of redis-reentrant and redis-cad in round trips;
  zookeeper  create+delete of an ephemeral node (one commit) and zk-recipe's
             hand-off in commits and round trips (interleaved rounds, each
             ratio taken within its round, medians);
  etcd       put+delete with a lease and etcd-recipe's hand-off likewise;
  postgres   pg_try_advisory_lock+pg_advisory_unlock (a grant in server memory,
             not a consensus write) and pg-advisory's hand-off in those units
             and in SELECT 1 round trips (one server, likewise);
  mariadb    GET_LOCK(name, 0)+RELEASE_LOCK (not a consensus write either) and
             mariadb-get-lock's hand-off likewise (one server);
  nats       KV create+conditional delete in a bucket of one replica (a
             replicated one grants twice on NATS before 2.9.21) and nats-kv's
             hand-off likewise;
  memcached  add, then gets+cas to an expired item (memcached-add's grant and
             release, on one connection speaking the text protocol) and
             memcached-add's hand-off likewise, in version round trips (one
             server).
`)
	var o calibrate.Options
	var backends string
	var asJSON bool
	fs.IntVar(&o.Clients, "clients", 16, "clients and keys of the Redis rates (one key per client); redis-benchmark connections")
	fs.DurationVar(&o.Duration, "duration", 5*time.Second, "length of each harness measurement (the Redis rates and the other backends' hand-offs split it over their rounds)")
	fs.IntVar(&o.Rounds, "rounds", 5, "interleaved rounds of the Redis rates and of the other backends' figures; medians are reported")
	fs.IntVar(&o.Requests, "requests", 200000, "redis-benchmark requests per command")
	fs.IntVar(&o.Samples, "samples", 1000, "raw writes and round trips timed per backend (split over the rounds of all but redis)")
	fs.IntVar(&o.Nodes, "nodes", 3, "ZooKeeper ensemble, etcd cluster and NATS cluster size (postgres, mariadb and memcached: one server)")
	fs.StringVar(&backends, "backends", strings.Join(calibrate.Backends, ","), "what to measure (comma-separated)")
	fs.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	if _, err := cli.ParseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("calibrate takes no arguments (got %q)", fs.Args())
	}
	o.Backends = strings.Split(backends, ",")
	f, err := calibrate.Run(ctx, o)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(f)
	}
	return f.WriteText(stdout)
}
