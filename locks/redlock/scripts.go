package redlock

import _ "embed"

// The Lua scripts, one file each. They are sent with EVAL, not EVALSHA: a
// node that restarted has forgotten every loaded script, and the NOSCRIPT
// fallback costs a second round trip that a node timeout of a few
// milliseconds cannot afford, or never happens when the first call timed
// out, leaving a key behind. The scripts are a few dozen bytes.
var (
	//go:embed release.lua
	releaseSrc string

	//go:embed extend.lua
	extendSrc string
)
