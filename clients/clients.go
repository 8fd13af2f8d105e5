// Package clients embeds locklab's reference client programs: lock
// libraries in other languages (Python, Java) speaking the client protocol
// (docs/client-protocol.md). locks/external writes them to a cache
// directory and runs them.
package clients

import "embed"

// Files holds python/*.py and java/*.java.
//
//go:embed python/*.py java/*.java
var Files embed.FS
