-- latch_count_down: take one off the latch's count; at 0 the key is deleted (the latch is
-- open) and "0" is published, which wakes every waiter. Below 0 (a count-down of an open
-- latch) the key is deleted too, without a message. Redisson's `RCountDownLatch.countDown()`
-- on the same key and channel.
--
-- KEYS[1]  the latch: a string, its count (missing = 0 = open)
-- KEYS[2]  this call's request key, relock_request:{name}:<id>: a copy of the call that
--          arrives again (a pool that resends after a reconnect) counts nothing
-- ARGV[1]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2]  ms the request key lives
-- ARGV[3]  its channel, redisson_countdownlatch__channel__{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- Returns the count left: > 0 still closed, 0 just opened, -1 was open already.
-- A key of another type, or a string that is not an integer, fails with WRONGTYPE and is left
-- untouched.
local seen = redis.call('get', KEYS[2])
if seen then
  return tonumber(seen)
end
local value = redis.call('get', KEYS[1])
if value and not string.match(value, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the latch key does not hold an integer')
end
local count = redis.call('decr', KEYS[1])
redis.call('set', KEYS[2], count, 'px', ARGV[2])
if count <= 0 then
  redis.call('del', KEYS[1])
end
if count == 0 then
  redis.call(ARGV[1], ARGV[3], 0)
end
return count
