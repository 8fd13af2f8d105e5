package faults_test

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
	"github.com/locklab/locklab/scenarios"
)

// Check refuses, before anything starts, faults the cluster cannot
// perform: here a partition that would have to cut the sentinels' direct
// links, and a client pause while clients run in the harness's process.
func ExampleCheck() {
	spec := cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1, Sentinels: 3}, Clients: 4}
	err := faults.Check(spec, false, []scenarios.Fault{
		{Type: scenarios.FaultLatency, At: 5 * time.Second, For: 10 * time.Second,
			Link: "redis-0-r0->redis-0", Latency: 3 * time.Second},
		{Type: scenarios.FaultPartition, At: 8 * time.Second, Isolate: "redis-0"},
		{Type: scenarios.FaultPauseClient, At: 12 * time.Second, For: 3 * time.Second, Client: "holder"},
	})
	fmt.Println(err)
	// Output:
	// faults[1] (partition): redis-0 and sentinel-0 are in different groups, but sentinels reach Redis nodes and each other directly, not through a proxy, so that traffic cannot be cut; use groups to cut redis-0's proxied links only, e.g. groups: [[redis-0], [clients, ...]]: faults: unsupported
	// faults[2] (pause-client): pause-client stops a client's process, so it needs workload.process_per_client: true: faults: unsupported
}
