-- reentrant_renew.lua: the watchdog's renewal of a reentrant holding.
-- KEYS[1] lock key; ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns 1 when the expiry was reset, 0 when we no longer hold the lock.
if redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
