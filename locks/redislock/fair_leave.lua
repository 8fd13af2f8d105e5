-- fair_leave.lua: a waiter that gives up leaves the queue and wakes the
-- others (it may have been the head).
-- KEYS[1] queue, KEYS[2] timeouts, KEYS[3] the lock's pub/sub channel
-- ARGV[1] owner id
redis.call('lrem', KEYS[1], 0, ARGV[1])
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('publish', KEYS[3], 'left')
return 1
