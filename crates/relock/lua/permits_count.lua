-- permits_count: the semaphore's available and acquired permits, after giving back the permits
-- whose lease has ended (so both are exact now). Redisson's `availablePermits` and
-- `acquiredPermits` on the same keys and channel.
--
-- KEYS[1]  the semaphore's count: a string, the number of available permits (missing = 0)
-- KEYS[2]  its timeouts, {name}:timeout: permit id (16 bytes) -> end of its lease (ms)
-- ARGV[1]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2]  its channel, redisson_sc:{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- Returns {available, acquired}: the count (may be below 0 after add_permits(-n)) and the
-- number of permits held.
-- A key of another type, or a count that is not an integer, fails with WRONGTYPE, and nothing
-- is changed.
local bad = check_count(KEYS[1])
if bad then
  return bad
end
reclaim(KEYS[1], ARGV[2], KEYS[2], server_ms(), ARGV[1])
return {tonumber(redis.call('get', KEYS[1]) or '0'), redis.call('zcard', KEYS[2])}
