-- latch_set: set the latch's count, only if it has none (it is open), and publish "1" (a
-- new count: Redisson closes its local latches on it; relock's waiters ignore it).
-- Redisson's `RCountDownLatch.trySetCount(n)` on the same key and channel.
--
-- KEYS[1]  the latch: a string, its count (missing = 0 = open)
-- ARGV[1]  n (1 ..= 10^15, checked by the client)
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  its channel, redisson_countdownlatch__channel__{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- Returns 1 (set) or 0 (the latch already has a count: nothing changed).
-- A key of another type fails with WRONGTYPE.
if redis.call('get', KEYS[1]) then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call(ARGV[2], ARGV[3], 1)
return 1
