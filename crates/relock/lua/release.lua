-- release: drop one count of a hold (or the whole hold); wake a waiter when the lock becomes
-- free. Acts only on the named hold's field, so a release that arrives late can never touch a
-- later hold (which has another field).
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the release channel, redisson_lock__channel:{name}
-- KEYS[3]  the fencing counter
-- KEYS[4..6] (fair lock only) the queue, the heartbeats and the sequence
-- ARGV[1]  the hold's field, <client_id>:<n>
-- ARGV[2]  grace in ms that the fencing counter outlives the lock
-- ARGV[3]  "1": drop one count (a nested guard); "all": drop the hold whatever its count (its
--          last guard, or the clean-up of an acquisition whose reply was lost)
-- ARGV[4]  the publish command: "publish" (or "spublish" on a cluster)
--
-- Returns 1 (released: the lock is free and a wake-up was published: "0" for a plain lock,
-- the first waiter's field for a fair lock, or "0" when nobody is in its line), 0 (the hold is
-- still there, count decremented) or nil (this hold is not here: its lease ran out, it was deleted or released).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return nil
end
if ARGV[3] == 'all' then
  redis.call('hdel', KEYS[1], ARGV[1])
elseif redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
  return 0
else
  redis.call('hdel', KEYS[1], ARGV[1])
end
if redis.call('hlen', KEYS[1]) > 0 then
  return 0
end
redis.call('del', KEYS[1])
redis.call('pexpire', KEYS[3], ARGV[2])
if #KEYS >= 6 then
  evict(KEYS[4], KEYS[5], KEYS[6], now_ms())
  -- Nobody in line: wake plain waiters of the same name (Redisson's RLock, relock's plain
  -- lock) with Redisson's unlock message.
  if not wake_head(KEYS[1], KEYS[2], KEYS[4], KEYS[5], KEYS[6], ARGV[4]) then
    redis.call(ARGV[4], KEYS[2], 0)
  end
else
  redis.call(ARGV[4], KEYS[2], 0)
end
return 1
