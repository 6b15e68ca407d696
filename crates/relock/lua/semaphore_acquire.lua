-- semaphore_acquire: take `n` permits if that many are available; never waits, never blocks.
-- Redisson's `RSemaphore.tryAcquire(n)` on the same key.
--
-- KEYS[1]  the semaphore: a string, the number of available permits (missing = 0 permits)
-- KEYS[2]  this acquire's request key, relock_request:{name}:<id>: the same for every
--          attempt of one `acquire`, so that an attempt that ran but whose reply was lost,
--          sent again, does not take permits twice
-- ARGV[1]  n, the permits wanted (1 ..= 10^15, checked by the client)
-- ARGV[2]  ms the request key lives (longer than any retry or resend of the request)
--
-- Returns {1, available} (taken: the count is n lower, `available` is what is left; -1 when
-- an earlier attempt of this request took them) or
-- {0, available} (fewer than n available, the count as it is: nothing changed).
-- A key of another type, or a string that is not an integer, fails with WRONGTYPE and is left
-- untouched.
if redis.call('exists', KEYS[2]) == 1 then
  return {1, -1}
end
local value = redis.call('get', KEYS[1])
if not value then
  return {0, 0}
end
local available = tonumber(value)
if not available or not string.match(value, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the semaphore key does not hold an integer')
end
if available >= tonumber(ARGV[1]) then
  redis.call('set', KEYS[2], 1, 'px', ARGV[2])
  return {1, redis.call('decrby', KEYS[1], ARGV[1])}
end
return {0, available}
