-- latch_delete: delete the latch (it is then open, count 0) and publish "0" so that its
-- waiters see that at once. (Redisson publishes "1" here, which leaves its own waiters asleep
-- on a latch that reads 0; "0" wakes them and relock's, and they find it open.)
--
-- KEYS[1]  the latch: a string, its count
-- ARGV[1]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2]  its channel, redisson_countdownlatch__channel__{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- Returns 1 (deleted, published) or 0 (there was no latch). A key of another type, or a
-- string that is not an integer, fails with WRONGTYPE and is left untouched.
local value = redis.call('get', KEYS[1])
if not value then
  return 0
end
if not string.match(value, '^%-?%d+$') then
  return redis.error_reply('WRONGTYPE the latch key does not hold an integer')
end
redis.call('del', KEYS[1])
redis.call(ARGV[1], ARGV[2], 0)
return 1
