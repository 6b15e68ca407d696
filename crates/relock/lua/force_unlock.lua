-- force_unlock: delete the lock whoever holds it, and wake a waiter.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2]  the message for the lock's waiters: "0" (wakes one per client) or "1" (a
--          read-write lock: wakes every waiter)
-- ARGV[3]  the release channel (an argument, not a key: an ACL user needs a channel grant
--          for it, `&`, not a key grant, `~`)
-- The fencing counter is not touched: it expires by itself (lib/mint.lua). A fair lock has its
-- own (fair_force_unlock.lua), which also tells the first in its line.
--
-- Returns 1 if a lock was deleted, 0 if there was none; WRONGTYPE or NOTALOCK (nothing deleted)
-- if the key is not a lock. The release channel always gets the deletion's message (so the
-- holder's watch hears it).
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
-- Never deletes what is not a lock: WRONGTYPE for a key of another type, NOTALOCK for a data
-- hash under the lock's name (lib/shape.lua), as `relock force-unlock` refuses it.
ensure_lock(KEYS[1])
redis.call('del', KEYS[1])
redis.call(ARGV[1], ARGV[3], ARGV[2])
return 1
