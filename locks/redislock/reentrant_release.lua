-- reentrant_release.lua: drop one hold; the last one deletes the lock and
-- wakes the waiters.
-- KEYS[1] lock key, KEYS[2] the lock's pub/sub channel
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns the holds left (>0: still held, expiry reset), 0 when the lock was
-- deleted and the release published, -1 when we did not hold it.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return left
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], 'released')
return 0
