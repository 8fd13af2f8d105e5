// Package all registers every lock implementation of locklab; import it for
// its side effect.
package all

import (
	_ "github.com/locklab/locklab/locks/redislock" // redis-* variants
)
