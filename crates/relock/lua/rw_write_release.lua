-- rw_write_release: drop one count of a write hold (or the whole hold). When it is gone: with
-- no other hold left the hash is deleted; with read holds left (the writer downgraded) the
-- mode turns to "read". Either way "1" (Redisson's read-unlock message) wakes every waiter:
-- readers can now share.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  the hold's field (<client_id>:<n>:write)
-- ARGV[2]  "1" (one count) or "all" (the whole hold)
-- ARGV[3]  the publish command
-- ARGV[4]  the prefix of readers' timeout keys, `{name}:`
-- ARGV[5]  the channel, redisson_rwlock:{name} (an argument, not a key: an ACL user needs a channel grant
--          for it, `&`, not a key grant, `~`)
--
-- Returns 1 (the hold is gone), 0 (counts are left) or nil (this hold is not here).
local released = drop_hold(KEYS[1], ARGV[1], ARGV[2])
if released ~= 1 then
  return released
end
if not settle_readers(KEYS[1], ARGV[5], ARGV[4], ARGV[3], 1) then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call(ARGV[3], ARGV[5], 1)
end
return 1
