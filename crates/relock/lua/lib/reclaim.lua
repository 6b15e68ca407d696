-- The permit-expirable semaphore's count checks and the return of expired permits
-- (permits_acquire, permits_release, permits_count; after lib/permits.lua).

-- The count's key must hold an integer (or nothing): checked before anything is written, since
-- a script is not rolled back when a later command fails.
local function check_count(count)
  local value = redis.call('get', count)
  if value and not string.match(value, '^%-?%d+$') then
    return redis.error_reply('WRONGTYPE the semaphore key does not hold an integer')
  end
  return nil
end

-- Gives the permits whose lease ended by `now` back to the count, and publishes the new count
-- if it is above 0 (a message of 0 or less wakes no Redisson waiter). Returns how many.
local function reclaim(count, channel, timeouts, now, publish)
  local expired = redis.call('zrangebyscore', timeouts, 0, now)
  local n = #expired
  if n == 0 then
    return 0
  end
  -- In slices: `unpack` of a very long list would overflow Lua's stack.
  for first = 1, n, 1000 do
    redis.call('zrem', timeouts, unpack(expired, first, math.min(first + 999, n)))
  end
  local available = redis.call('incrby', count, n)
  if available > 0 then
    redis.call(publish, channel, available)
  end
  return n
end

