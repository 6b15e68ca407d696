-- toy_rate_take: take one of a toy rate limiter's permits for the current window (test-only).
-- It publishes nothing: a caller that finds the window full polls, no later than its end.
--
-- KEYS[1]  the window's count (a string that expires with the window)
-- ARGV[1]  the most permits a window gives
-- ARGV[2]  the window in ms (counted from its first take)
--
-- Returns
--   {1, left}   taken; `left` more can be taken in this window
--   {0, pttl}   none left; the window ends in pttl ms (-1: the key has no expiry)
-- A key of another type fails with WRONGTYPE.
local limit = tonumber(ARGV[1])
local n = tonumber(redis.call('get', KEYS[1]) or '0')
if n == nil then
  return redis.error_reply('WRONGTYPE the rate count is not an integer')
end
if n < limit then
  n = redis.call('incr', KEYS[1])
  if n == 1 then
    redis.call('pexpire', KEYS[1], tonumber(ARGV[2]))
  end
  return {1, limit - n}
end
return {0, redis.call('pttl', KEYS[1])}
