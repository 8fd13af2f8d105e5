-- fair_acquire.lua: Redisson-style fair lock (RFairLock). The lock is a
-- hash {owner id: 1, fence: token} as redis-reentrant's; waiters queue in
-- the list KEYS[3] in request order, and the sorted set KEYS[4] scores
-- each waiter with the time (ms, Redis clock) by which it must ask again
-- or lose its place: a waiter that died leaves the queue on its own.
-- KEYS[1] lock hash, KEYS[2] fence counter, KEYS[3] queue, KEYS[4] timeouts
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds, ARGV[3] wait in milliseconds
-- Returns {1, token} when taken, {0, pttl} when queued.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
while true do
  local first = redis.call('lindex', KEYS[3], 0)
  if not first then
    break
  end
  local due = redis.call('zscore', KEYS[4], first)
  if due and tonumber(due) > now then
    break
  end
  redis.call('lpop', KEYS[3])
  redis.call('zrem', KEYS[4], first)
end
if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[3], 0)
  if not head or head == ARGV[1] then
    if head then
      redis.call('lpop', KEYS[3])
      redis.call('zrem', KEYS[4], ARGV[1])
    end
    local token = redis.call('incr', KEYS[2])
    redis.call('hset', KEYS[1], ARGV[1], 1, 'fence', token)
    redis.call('pexpire', KEYS[1], ARGV[2])
    return {1, token}
  end
end
if not redis.call('zscore', KEYS[4], ARGV[1]) then
  redis.call('rpush', KEYS[3], ARGV[1])
end
redis.call('zadd', KEYS[4], now + tonumber(ARGV[3]), ARGV[1])
return {0, redis.call('pttl', KEYS[1])}
