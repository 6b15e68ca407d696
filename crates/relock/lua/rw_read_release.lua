-- rw_read_release: drop one count of a read hold (or the whole hold). When the hold is gone,
-- the lock's hash lives on as long as its longest live hold, and is deleted (and "0",
-- Redisson's unlock message, published: wakes a writer) when none is left.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  this hold's timeout key
-- ARGV[1]  the hold's field
-- ARGV[2]  "1" (one count) or "all" (the whole hold)
-- ARGV[3]  the publish command
-- ARGV[4]  the prefix of readers' timeout keys, `{name}:`
-- ARGV[5]  the channel, redisson_rwlock:{name} (an argument, not a key: an ACL user needs a channel grant
--          for it, `&`, not a key grant, `~`)
--
-- Returns 1 (the hold is gone), 0 (counts are left) or nil (this hold is not here).
local released = drop_hold(KEYS[1], ARGV[1], ARGV[2])
if released == 0 then
  return 0
end
-- Gone (or already gone: expired, force-unlocked): its timeout key goes with it.
redis.call('del', KEYS[2])
if released == nil then
  return nil
end
settle_readers(KEYS[1], ARGV[5], ARGV[4], ARGV[3], 0)
return 1
