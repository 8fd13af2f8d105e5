-- rw_naive_read.lua: redis-rw-naive's reader registration, sent after a
-- separate HGET of the mode found no writer (check-then-act across two
-- round trips: a writer that took the lock in between is overwritten).
-- KEYS[1] lock hash, KEYS[2] fence counter key
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns {1, token}.
local token = redis.call('incr', KEYS[2])
redis.call('hset', KEYS[1], 'mode', 'read', ARGV[1], 1)
redis.call('set', KEYS[1] .. ':' .. ARGV[1] .. ':rwlock_timeout', 1, 'px', ARGV[2])
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return {1, token}
