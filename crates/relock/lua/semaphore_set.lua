-- semaphore_set: create the semaphore with `n` permits, only if it does not exist; publish
-- the new count so that waiters (which saw a missing key as 0 permits) take them.
-- Redisson's `RSemaphore.trySetPermits(n)` on the same key and channel.
--
-- KEYS[1]  the semaphore: a string, the number of available permits
-- ARGV[1]  n (0 ..= 10^15, checked by the client)
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  its channel, redisson_sc:{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
--
-- Returns 1 (set, and published when n > 0) or 0 (the key exists: nothing changed).
-- A key of another type fails with WRONGTYPE.
if redis.call('get', KEYS[1]) then
  return 0
end
redis.call('set', KEYS[1], ARGV[1])
if tonumber(ARGV[1]) > 0 then
  redis.call(ARGV[2], ARGV[3], ARGV[1])
end
return 1
