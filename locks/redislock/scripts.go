package redislock

import (
	"embed"

	"github.com/redis/go-redis/v9"
)

// scripts holds the Lua scripts, one file each.
//
//go:embed *.lua
var scripts embed.FS

// The scripts. redis.Script.Run sends EVALSHA and falls back to EVAL only
// when the server does not have the script yet.
var (
	acquireScript          = script(ScriptAcquire)
	releaseScript          = script(ScriptRelease)
	renewScript            = script("renew")
	reentrantAcquireScript = script("reentrant_acquire")
	reentrantReleaseScript = script("reentrant_release")
	reentrantRenewScript   = script("reentrant_renew")
)

// Script names accepted by ScriptSource.
const (
	ScriptAcquire = "acquire" // SET NX PX + INCR fence: redis-cad, redis-watchdog, redis-set-del
	ScriptRelease = "release" // compare-and-delete: redis-cad, redis-watchdog
)

// ScriptSource returns the Lua source of one of the package's scripts
// (name.lua), so a calibration can send the very same commands with
// redis-benchmark; "" for an unknown name.
func ScriptSource(name string) string {
	src, err := scripts.ReadFile(name + ".lua")
	if err != nil {
		return ""
	}
	return string(src)
}

// script is the embedded script name.lua; it panics (at init) when there
// is no such file.
func script(name string) *redis.Script {
	src := ScriptSource(name)
	if src == "" {
		panic("redislock: no script " + name + ".lua")
	}
	return redis.NewScript(src)
}
