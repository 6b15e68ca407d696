-- semaphore_add: add `n` permits (a release; or `add_permits`, where n may be negative) and,
-- if permits are then available, publish how many, so that up to that many waiters wake.
-- Redisson's `RSemaphore.release(n)` / `addPermits(n)` on the same key and channel.
--
-- KEYS[1]  the semaphore: a string, the number of available permits (missing = 0 permits)
-- KEYS[2]  this call's request key, relock_request:{name}:<id>: a copy of the call that
--          arrives again (a pool that resends after a reconnect) adds nothing
-- ARGV[1]  n, the permits to add (non-zero; |n| <= 10^15, checked by the client)
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  ms the request key lives
-- ARGV[4]  its channel, redisson_sc:{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- Returns {1, available}: added, the new count (published when it is above 0: Redisson's
-- waiters cannot take a message of 0 or less); or {0, available}: refused, nothing changed,
-- because the count would go above 10^15 (the scripts compare counts as Lua numbers, which
-- are exact only up to 2^53).
-- A key of another type, or a string that is not an integer, fails with WRONGTYPE and is left
-- untouched.
local seen = redis.call('get', KEYS[2])
if seen then
  return {1, tonumber(seen)}
end
local value = redis.call('get', KEYS[1])
local current = 0
if value then
  current = tonumber(value)
  if not current or not string.match(value, '^%-?%d+$') then
    return redis.error_reply('WRONGTYPE the semaphore key does not hold an integer')
  end
end
if current + tonumber(ARGV[1]) > 1e15 then
  return {0, current}
end
local available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], available, 'px', ARGV[3])
if available > 0 then
  redis.call(ARGV[2], ARGV[4], available)
end
return {1, available}
