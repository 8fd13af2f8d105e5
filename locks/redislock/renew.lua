-- renew.lua: compare-and-pexpire (the watchdog's renewal).
-- KEYS[1] lock key; ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns 1 when our key's expiry was reset, 0 when the key is gone or
-- someone else's.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
