-- rw_acquire.lua: Redisson-style read-write lock (RReadWriteLock).
-- The lock is a hash {mode: 'read'|'write', owner id: hold count}; every
-- reader also has its own key KEYS[1]..':'..owner..':rwlock_timeout' that
-- its watchdog renews, so a dead reader's hold runs out without the
-- others' renewals keeping it alive.
-- KEYS[1] lock hash, KEYS[2] fence counter key
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds, ARGV[3] 'read' or 'write'
-- Returns {1, token} when taken, {0, pttl} when it must wait.
local key = KEYS[1]
local mode = redis.call('hget', key, 'mode')
if mode == 'read' then
  -- forget readers whose own timeout ran out
  for _, f in ipairs(redis.call('hkeys', key)) do
    if f ~= 'mode' and redis.call('exists', key .. ':' .. f .. ':rwlock_timeout') == 0 then
      redis.call('hdel', key, f)
    end
  end
  if redis.call('hlen', key) <= 1 then
    redis.call('del', key)
    mode = false
  end
end
if mode == false or (mode == 'read' and ARGV[3] == 'read') then
  local token = redis.call('incr', KEYS[2])
  redis.call('hset', key, 'mode', ARGV[3], ARGV[1], 1)
  if ARGV[3] == 'read' then
    redis.call('set', key .. ':' .. ARGV[1] .. ':rwlock_timeout', 1, 'px', ARGV[2])
  end
  if redis.call('pttl', key) < tonumber(ARGV[2]) then
    redis.call('pexpire', key, ARGV[2])
  end
  return {1, token}
end
return {0, redis.call('pttl', key)}
