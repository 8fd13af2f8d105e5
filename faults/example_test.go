package faults_test

import (
	"fmt"
	"time"

	"github.com/locklab/locklab/cluster"
	"github.com/locklab/locklab/faults"
)

// Check refuses, before anything starts, faults the cluster cannot
// perform: here latency on a link that carries nothing (Redis servers
// never dial sentinels), and a client pause while clients run in the
// harness's process. Cutting the primary off from the sentinels is fine.
func ExampleCheck() {
	spec := cluster.Spec{Redis: &cluster.RedisSpec{Replicas: 1, Sentinels: 3}, Clients: 4}
	err := faults.Check(cluster.PlanOf(spec), false, []faults.Fault{
		{Type: faults.Latency, At: 5 * time.Second, For: 10 * time.Second,
			Link: "redis-0-r0->redis-0", Latency: 3 * time.Second},
		{Type: faults.Partition, At: 8 * time.Second, Isolate: "redis-0"},
		{Type: faults.Latency, At: 9 * time.Second, Link: "redis-0->sentinel-0", Latency: time.Second},
		{Type: faults.PauseClient, At: 12 * time.Second, For: 3 * time.Second, Client: "holder"},
	})
	fmt.Println(err)
	// Output:
	// faults[2].link (latency): no link redis-0->sentinel-0: Redis servers never dial sentinels; Sentinel's connections are sentinel-0->redis-0: faults: unsupported
	// faults[3].client (pause-client): pause-client stops a client's process, so it needs workload.process_per_client: true: faults: unsupported
}
