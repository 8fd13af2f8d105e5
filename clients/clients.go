// Package clients embeds locklab's reference client programs: lock
// libraries in other languages (Python, Java) speaking the client protocol
// (docs/client-protocol.md). locks/external writes them to a cache
// directory and runs them.
// It is a leaf: it imports nothing of locklab, and only locks/external
// imports it (docs/architecture.md).
package clients

import "embed"

// Files holds python/*.py and java/*.java.
//
//go:embed python/*.py java/*.java
var Files embed.FS
