-- semaphore_acquire: take `n` permits if that many are available; never waits, never blocks.
-- Redisson's `RSemaphore.tryAcquire(n)` on the same key.
--
-- KEYS[1]  the semaphore: a string, the number of available permits (missing = 0 permits)
-- KEYS[2]  this acquire's request key, relock_request:{name}:<id>: the same for every
--          attempt of one `acquire`, so that an attempt that ran but whose reply was lost,
--          sent again, does not take permits twice
-- ARGV[1]  n, the permits wanted (1 ..= 10^15, checked by the client)
-- ARGV[2]  ms the request key lives (longer than any retry or resend of the request)
-- ARGV[3]  optional "return": take nothing; give back what this request took, once, and make
--          any copy of it still on its way take nothing (for an acquire that gave up, or
--          whose caller is gone, after an attempt whose reply never came)
-- ARGV[4], ARGV[5]  with "return": the publish command, and the channel (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- The request key holds 1 while the request holds the permits it took, and 0 once it has
-- given them back or given up: a copy arriving then takes nothing.
--
-- Returns {1, available} (taken: the count is n lower, `available` is what is left; -1 when
-- an earlier attempt of this request took them) or
-- {0, available} (fewer than n available, the count as it is: nothing changed; also for a
-- request already given back).
-- With "return": {2, available} (the permits this request had taken are back) or {0, 0}
-- (it had taken nothing, or gave them back before).
-- A key of another type, or a string that is not an integer, fails with WRONGTYPE and is left
-- untouched; except that a copy of a request already given back answers {0, 0} for a string
-- that is not an integer, and a "return" on one fails with ERR (INCRBY's) once it has marked
-- the request given back: permits cannot be put back into data.
local seen = redis.call('get', KEYS[2])
if ARGV[3] == 'return' then
  redis.call('set', KEYS[2], 0, 'px', ARGV[2])
  if seen ~= '1' then
    return {0, 0}
  end
  local available = redis.call('incrby', KEYS[1], ARGV[1])
  if available > 0 then
    redis.call(ARGV[4], ARGV[5], available)
  end
  return {2, available}
end
if seen == '1' then
  return {1, -1}
end
local value = redis.call('get', KEYS[1])
if seen then
  return {0, tonumber(value) or 0}
end
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
