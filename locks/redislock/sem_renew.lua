-- sem_renew.lua: the watchdog's renewal of a permit.
-- KEYS[1] permits set; ARGV[1] owner id, ARGV[2] ttl in milliseconds
-- Returns 1 when renewed, 0 when the permit is gone or expired.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local due = redis.call('zscore', KEYS[1], ARGV[1])
if not due or tonumber(due) <= now then
  return 0
end
redis.call('zadd', KEYS[1], 'xx', now + tonumber(ARGV[2]), ARGV[1])
if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
return 1
