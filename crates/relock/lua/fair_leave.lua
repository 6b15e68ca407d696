-- fair_leave: a waiter gives up (timed out, cancelled, failed, its client shutting down) and
-- leaves the line.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the line (lib/queue.lua)
-- KEYS[3]  the fencing counter
-- KEYS[4]  the grant record (lib/queue.lua)
-- ARGV[1]  owner field
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  ms the fencing counter lives once seeded (the grace)
-- ARGV[4]  the fair lock's channel, relock_fair_channel:{name} (an argument, not a key: an ACL
--          user needs a channel grant for it, `&`, not a key grant, `~`)
--
-- Returns 1 if the waiter was in the line, 0 if not, 2 if a release had handed it the lock
-- (which it had not taken: the client sends a leave only for a waiter that did not take a
-- grant). That hold is released here and the lock passed on at once, rather than kept for its
-- first lease. If the waiter was first and the lock is free, the next is handed it or told, so
-- the line never stalls behind someone who left.
local q = line(KEYS[2], KEYS[4])
local now = now_ms()
local evicted = evict(q, now)
local handed = redis.call('hdel', KEYS[1], ARGV[1])
if handed == 1 then
  -- Its grant record goes with the hold (a handoff below writes the next one).
  redis.call('del', q.grant)
end
local was_first = head(q) == ARGV[1]
local removed = dequeue(q, ARGV[1])
if was_first or evicted > 0 or handed == 1 then
  pass_on(KEYS[1], KEYS[3], tonumber(ARGV[3]), ARGV[4], q, ARGV[2], now, true)
end
if handed == 1 then
  return 2
end
if removed then
  return 1
end
return 0
