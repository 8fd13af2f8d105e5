-- rw_release.lua: drop a read or write hold; the last one deletes the
-- lock and wakes the waiters.
-- KEYS[1] lock hash, KEYS[2] the lock's pub/sub channel
-- ARGV[1] owner id, ARGV[2] 'read' or 'write'
-- Returns 1 when we held it, 0 when not.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[2] == 'read' then
  redis.call('hdel', KEYS[1], ARGV[1])
  redis.call('del', KEYS[1] .. ':' .. ARGV[1] .. ':rwlock_timeout')
  if redis.call('hlen', KEYS[1]) > 1 then
    return 1
  end
end
redis.call('del', KEYS[1])
redis.call('publish', KEYS[2], 'released')
return 1
