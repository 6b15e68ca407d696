-- semaphore_drain: take every available permit at once; the count becomes 0 (the key stays,
-- holding "0"). Redisson's `RSemaphore.drainPermits()` on the same key.
--
-- KEYS[1]  the semaphore: a string, the number of available permits (missing = 0 permits)
-- ARGV[1]  unused (kept so that every script documents ARGV[1])
--
-- Returns the number taken: the count before, or 0 if it was missing or not above 0 (as in
-- Redisson, a negative count left by `add_permits(-n)` is set to 0 too).
-- A key of another type, or a string that is not an integer, fails with WRONGTYPE and is left
-- untouched.
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
local available = tonumber(value)
if not available or not string.match(value, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold an integer')
end
redis.call('set', KEYS[1], 0)
if available > 0 then
  return available
end
return 0
