// Package netns is locklab's provider netns (cluster.ProviderNetns):
// importing it registers the provider with package cluster. It runs every
// server in its own network namespace with its own address from
// 198.18.0.0/15 (the range RFC 2544 sets aside for benchmarks), on the
// server's standard port:
//
//   - one /24 of that range per cluster, picked at random among those the
//     harness's namespace does not use yet: the harness (clients) is .1,
//     the nodes .2, .3, ... in plan order;
//   - a bridge in a namespace of its own ("<id>-br") joins one veth link
//     per node and one to the harness's namespace, so nothing is added to
//     the machine's namespace (the harness itself runs in a namespace of
//     the run: harness.go);
//   - links are not proxied: every plan link is a pair of addresses, and
//     faults on it are nftables rules in the namespace of its server end
//     (rules.go), so a cut link drops packets — a new connection
//     times out, as across a real partition;
//   - Close kills the servers, removes the veth link from the harness's
//     namespace and deletes the run's namespaces (which removes their
//     links, bridge and rules).
package netns
