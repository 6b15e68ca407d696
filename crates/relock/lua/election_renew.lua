-- election_renew: keeps an election's record alive with its leader's lock, in the watchdog's
-- round (the lock itself is renewed as any hold).
--
-- KEYS[1]  the election's lock hash
-- KEYS[2]  the election's record
-- ARGV[1]  lease in ms
-- ARGV[2]  the leader's field
--
-- Returns 1 (the record is this leader's and lives at least ARGV[1] ms), 0 (this leader's
-- lock is gone: nothing is created) or 2 (the lock is still this leader's but the record is
-- not: it was deleted or evicted, so observers see nobody leading; nothing is created, and
-- the leader is told its leadership is lost).
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return 0
end
if redis.call('hget', KEYS[2], 'owner') ~= ARGV[2] then
  return 2
end
local pttl = redis.call('pttl', KEYS[2])
if pttl >= 0 and pttl < tonumber(ARGV[1]) then
  redis.call('pexpire', KEYS[2], ARGV[1])
end
return 1
