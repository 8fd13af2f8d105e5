-- leaky_release.lua: give a counted permit back and wake the waiters.
-- KEYS[1] counter, KEYS[2] the lock's pub/sub channel
-- Returns 1 when a permit was counted, 0 when the counter was already 0.
if tonumber(redis.call('get', KEYS[1]) or '0') > 0 then
  redis.call('decr', KEYS[1])
  redis.call('publish', KEYS[2], 'released')
  return 1
end
return 0
