-- What a forward jump of the server's wall clock by ARGV[1] ms does to
-- expiry, in every database 0 .. ARGV[2]-1: Redis stores expiry as an
-- absolute wall-clock time, so each key's remaining TTL shrinks by the
-- jump, and keys with PTTL <= jump expire (are deleted). Keys without a TTL
-- are untouched. Inside a script time stands still (Redis 7 freezes it at
-- the script's start), so every key sees the same jump.
--
-- KEYS '*' blocks the server for the whole scan: fine for test-sized
-- datasets (a few thousand keys), not for a production one.
--
-- Returns {expired, shortened, untouched (no TTL), scanned, the least
-- remaining PTTL of a shortened key (-1 when none)}.
local jump = tonumber(ARGV[1])
local dbs = tonumber(ARGV[2])
local expired, shortened, untouched, scanned = 0, 0, 0, 0
local least = -1
for db = 0, dbs - 1 do
  redis.call('SELECT', db)
  local keys = redis.call('KEYS', '*')
  for _, k in ipairs(keys) do
    scanned = scanned + 1
    local ttl = redis.call('PTTL', k)
    if ttl == -1 then
      untouched = untouched + 1
    elseif ttl >= 0 then
      if ttl <= jump then
        redis.call('DEL', k)
        expired = expired + 1
      else
        redis.call('PEXPIRE', k, ttl - jump)
        shortened = shortened + 1
        if least < 0 or ttl - jump < least then
          least = ttl - jump
        end
      end
    end
  end
end
return {expired, shortened, untouched, scanned, least}
