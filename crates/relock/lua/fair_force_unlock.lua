-- fair_force_unlock: delete a fair lock whoever holds it, and tell its first waiter.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the line, KEYS[3] the fencing counter (unused here), KEYS[4] the grant record
--          (lib/queue.lua)
-- ARGV[1]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2]  the release channel (an argument, not a key: an ACL user needs a channel grant
--          for it, `&`, not a key grant, `~`)
-- ARGV[3]  the fair lock's channel, for the message to its first waiter
-- The fencing counter is not touched: it expires by itself (lib/mint.lua).
--
-- Returns 1 if a lock was deleted, 0 if there was none; WRONGTYPE or NOTALOCK (nothing deleted)
-- if the key is not a lock. The release channel gets Redisson's unlock message `0` (so the
-- holder's watch, and plain waiters of the same name, hear of the deletion); the first waiter
-- gets its owner field on the fair channel.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
-- Never deletes what is not a lock: WRONGTYPE for a key of another type, NOTALOCK for a data
-- hash under the lock's name (lib/shape.lua), as `relock force-unlock` refuses it.
ensure_lock(KEYS[1])
local q = line(KEYS[2], KEYS[4])
-- The grant record of the hold it ends, if a handoff gave it the lock.
redis.call('del', q.grant)
redis.call('del', KEYS[1])
evict(q, now_ms())
-- The first waiter is told, not handed the lock (it takes it with its own acquire).
wake_head(KEYS[1], ARGV[3], q, ARGV[1])
redis.call(ARGV[1], ARGV[2], 0)
return 1
