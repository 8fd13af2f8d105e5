-- rw_renew.lua: the watchdog's renewal of a read or write hold.
-- KEYS[1] lock hash; ARGV[1] owner id, ARGV[2] ttl in milliseconds,
-- ARGV[3] 'read' or 'write'
-- Returns 1 when renewed, 0 when we no longer hold the lock.
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[3] == 'read' then
  local t = KEYS[1] .. ':' .. ARGV[1] .. ':rwlock_timeout'
  if redis.call('pexpire', t, ARGV[2]) == 0 then
    return 0
  end
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  return 1
end
return redis.call('pexpire', KEYS[1], ARGV[2])
