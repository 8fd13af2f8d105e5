package redislock

// Script names accepted by ScriptSource.
const (
	ScriptAcquire = "acquire" // SET NX PX + INCR fence: redis-cad, redis-watchdog, redis-set-del
	ScriptRelease = "release" // compare-and-delete: redis-cad, redis-watchdog
)

// ScriptSource returns the Lua source of one of the package's scripts, so a
// calibration can send the very same commands with redis-benchmark; "" for
// an unknown name.
func ScriptSource(name string) string {
	switch name {
	case ScriptAcquire:
		return acquireSrc
	case ScriptRelease:
		return releaseSrc
	}
	return ""
}
