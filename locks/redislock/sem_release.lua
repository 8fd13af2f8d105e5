-- sem_release.lua: give a permit back and wake the waiters.
-- KEYS[1] permits set, KEYS[2] the lock's pub/sub channel; ARGV[1] owner id
-- Returns 1 when we held a live permit, 0 when it was gone or expired.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('zscore', KEYS[1], ARGV[1])
if not due then
  return 0
end
redis.call('zrem', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], 'released')
if tonumber(due) <= now then
  return 0
end
return 1
