-- permits_release: give back the permit with id ARGV[1], if it is still there, and publish the
-- new count. Redisson's `RPermitExpirableSemaphore.tryRelease(id)` on the same keys and channel.
-- Releasing an id twice (a retry after a lost reply) gives its permit back once.
--
-- KEYS[1]  the semaphore's count: a string, the number of available permits (missing = 0)
-- KEYS[2]  its timeouts, {name}:timeout: permit id (16 bytes) -> end of its lease (ms)
-- ARGV[1]  the permit's id: hex digits, stored as bytes
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  its channel, redisson_sc:{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
-- KEYS[3]  optional: this release's request key, relock_request:{name}:<id>, the same for every
--          copy of one release. A copy that gives the permit back records its reply there, so
--          that a copy sent again after a lost reply returns what the first one did, not 0.
-- ARGV[4]  with KEYS[3]: ms the request key lives (longer than any resend)
-- ARGV[5]  optional "forget": record the reply even when it is 0 (a give-back after an
--          acquire whose reply never came: that acquire, if it lands later, takes nothing)
--
-- Returns 1 (released while its lease ran), 2 (released, but its lease had ended: nobody had
-- reclaimed it yet) or 0 (not there: released before, reclaimed after its lease, or deleted).
-- A key of another type, or a count that is not an integer, fails with WRONGTYPE, and nothing
-- is changed.
local bad = check_count(KEYS[1])
if bad then
  return bad
end
if KEYS[3] then
  local earlier = redis.call('get', KEYS[3])
  if earlier then
    return tonumber(earlier)
  end
end
local id = member(ARGV[1])
local ends = redis.call('zscore', KEYS[2], id)
if not ends then
  if ARGV[5] == 'forget' then
    redis.call('set', KEYS[3], 0, 'px', ARGV[4])
  end
  return 0
end
redis.call('zrem', KEYS[2], id)
local available = redis.call('incrby', KEYS[1], 1)
if available > 0 then
  redis.call(ARGV[2], ARGV[3], available)
end
local released = 1
if tonumber(ends) <= server_ms() then
  released = 2
end
if KEYS[3] then
  redis.call('set', KEYS[3], released, 'px', ARGV[4])
end
return released
