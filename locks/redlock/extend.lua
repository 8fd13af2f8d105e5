-- extend.lua: compare-and-pexpire on one Redlock node (renewal).
-- KEYS[1] lock key; ARGV[1] the holding's random value, ARGV[2] ttl in ms
-- Returns 1 when our key's expiry was reset, 0 when the key is gone or
-- someone else's. A missing key is not set again: a node that lost the key
-- (restart, early expiry) may meanwhile have given it to someone else's
-- majority, so only the nodes still holding ours count for the renewal.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
