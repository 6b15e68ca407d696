-- release: drop one count of a plain lock's hold (or the whole hold); wake the waiters when
-- the lock becomes free. Acts only on the named hold's field, so a release that arrives late
-- can never touch a later hold (which has another field).
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the release channel, redisson_lock__channel:{name}
-- KEYS[3]  the fencing counter (unused: it expires by itself; named so that the keys stay
--          those of every other release)
-- ARGV[1]  the hold's field, <client_id>:<n>
-- ARGV[2]  unused (kept so that both release scripts take the same arguments)
-- ARGV[3]  "1": drop one count (a nested guard); "all": drop the hold whatever its count (its
--          last guard, or the clean-up of an acquisition whose reply was lost)
-- ARGV[4]  the publish command: "publish" (or "spublish" on a cluster)
--
-- Returns 1 (released: the lock is free and "0", Redisson's unlock message, was published), 0
-- (the hold is still there, count decremented) or nil (this hold is not here: its lease ran
-- out, it was deleted or released).
--
-- The last count costs one HDEL: a lock hash holds one field (its one holder), so removing it
-- removes the key, and HDEL's reply says whether the field was there. Checking that no other
-- field is left would cost a call per release for a hash written by hand; its waiters are then
-- woken for nothing, find it held, and park again.
if ARGV[3] == 'all' then
  if redis.call('hdel', KEYS[1], ARGV[1]) == 0 then
    return nil
  end
else
  if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
    return nil
  end
  if redis.call('hincrby', KEYS[1], ARGV[1], -1) > 0 then
    return 0
  end
  redis.call('hdel', KEYS[1], ARGV[1])
end
redis.call(ARGV[4], KEYS[2], 0)
return 1
