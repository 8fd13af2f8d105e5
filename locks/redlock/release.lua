-- release.lua: compare-and-delete on one Redlock node.
-- KEYS[1] lock key; ARGV[1] the holding's random value
-- Returns 1 when our key was deleted, 0 when the key is gone or someone else's.
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
