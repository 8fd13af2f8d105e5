package redislock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts, one file each. redis.Script.Run sends EVALSHA and falls
// back to EVAL only when the server does not have the script yet.
var (
	//go:embed acquire.lua
	acquireSrc    string
	acquireScript = redis.NewScript(acquireSrc)

	//go:embed release.lua
	releaseSrc    string
	releaseScript = redis.NewScript(releaseSrc)

	//go:embed renew.lua
	renewSrc    string
	renewScript = redis.NewScript(renewSrc)

	//go:embed reentrant_acquire.lua
	reentrantAcquireSrc    string
	reentrantAcquireScript = redis.NewScript(reentrantAcquireSrc)

	//go:embed reentrant_release.lua
	reentrantReleaseSrc    string
	reentrantReleaseScript = redis.NewScript(reentrantReleaseSrc)

	//go:embed reentrant_renew.lua
	reentrantRenewSrc    string
	reentrantRenewScript = redis.NewScript(reentrantRenewSrc)
)
