-- acquire.lua: take the lock and draw its fencing token in one step.
-- KEYS[1] lock key, KEYS[2] fence counter key
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns {1, token} when taken, {0, pttl} when held by someone else
-- (pttl is the key's remaining time to live in ms, -1 when it has none).
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('incr', KEYS[2])}
end
return {0, redis.call('pttl', KEYS[1])}
