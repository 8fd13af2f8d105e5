-- reentrant_acquire.lua: Redisson-style reentrant acquire.
-- The lock is a hash {owner id: hold count}, plus the field 'fence' holding
-- the fencing token of the current holding (owner ids are hex, so they
-- never collide with it).
-- KEYS[1] lock key, KEYS[2] fence counter key
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns {1, token} when taken or re-entered (re-entering returns the
-- token of the outer holding), {0, pttl} when someone else holds it.
if redis.call('exists', KEYS[1]) == 0 then
  local token = redis.call('incr', KEYS[2])
  redis.call('hset', KEYS[1], ARGV[1], 1, 'fence', token)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, token}
end
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  redis.call('pexpire', KEYS[1], ARGV[2])
  return {1, tonumber(redis.call('hget', KEYS[1], 'fence'))}
end
return {0, redis.call('pttl', KEYS[1])}
