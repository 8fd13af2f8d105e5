-- sem_acquire.lua: a semaphore of expiring permits (as Redisson's
-- RPermitExpirableSemaphore and the redis-semaphore library): a sorted set
-- {owner id: expiry in ms on the Redis clock}. Expired permits are removed
-- before counting, so a dead holder's permit comes back after the TTL.
-- KEYS[1] permits set, KEYS[2] fence counter key
-- ARGV[1] owner id, ARGV[2] ttl in milliseconds, ARGV[3] permits
-- Returns {1, token} when a permit was taken, {0, ms until the earliest
-- permit expires} when all are taken.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if redis.call('zcard', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('zadd', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  return {1, redis.call('incr', KEYS[2])}
end
local first = redis.call('zrange', KEYS[1], 0, 0, 'withscores')
return {0, tonumber(first[2]) - now}
