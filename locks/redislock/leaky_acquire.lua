-- leaky_acquire.lua: redis-semaphore-leaky, broken on purpose: permits are
-- a plain counter without expiry, so a holder that dies never gives its
-- permit back.
-- KEYS[1] counter, KEYS[2] fence counter key; ARGV[1] permits
-- Returns {1, token} when a permit was taken, {0, -1} when none is left.
if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('incr', KEYS[1])
  return {1, redis.call('incr', KEYS[2])}
end
return {0, -1}
