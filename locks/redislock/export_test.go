package redislock

// SetAfterSetNX makes redis-setnx-expire's Acquire call f between its SETNX
// (and INCR) and its EXPIRE. Set it before the client is used.
func SetAfterSetNX(c *Client, f func()) { c.afterSetNX = f }
