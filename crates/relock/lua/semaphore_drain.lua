-- semaphore_drain: take every available permit at once; the count becomes 0 (the key stays,
-- holding "0"). Redisson's `RSemaphore.drainPermits()` on the same key.
--
-- KEYS[1]  the semaphore: a string, the number of available permits (missing = 0 permits)
-- KEYS[2]  this call's request key, relock_request:{name}:<id>: a copy of the call that
--          arrives again (a pool that resends after a reconnect) takes nothing and returns
--          what the first took
-- ARGV[1]  the publish command (unused)
-- ARGV[2]  ms the request key lives
-- ARGV[3]  its channel (unused: nothing is published)
--
-- Returns the number taken: the count before, or 0 if it was missing or not above 0 (as in
-- Redisson, a negative count left by `add_permits(-n)` is set to 0 too).
-- A key of another type, or a string that is not an integer, fails with WRONGTYPE and is left
-- untouched.
local seen = redis.call('get', KEYS[2])
if seen then
  return tonumber(seen)
end
local value = redis.call('get', KEYS[1])
if not value then
  -- Recorded too: a copy that lands after permits were added must take nothing.
  redis.call('set', KEYS[2], 0, 'px', ARGV[2])
  return 0
end
local available = tonumber(value)
if not available or not string.match(value, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold an integer')
end
redis.call('set', KEYS[1], 0)
local taken = math.max(available, 0)
redis.call('set', KEYS[2], taken, 'px', ARGV[2])
return taken
