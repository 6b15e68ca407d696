-- fair_release: release.lua for a fair lock: when the lock becomes free, it is handed to the
-- first live waiter in its line (lib/handoff.lua), or that waiter is told (and only it), or
-- plain waiters are woken when the line is empty.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the queue, KEYS[3] the heartbeats, KEYS[4] the sequence
-- KEYS[5]  the fencing counter (a handoff mints the next holder's token)
-- KEYS[6]  the handoff hash
-- ARGV[1]  the hold's field, <client_id>:<n>
-- ARGV[2]  "1": drop one count (a nested guard); "all": drop the hold whatever its count
-- ARGV[3]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[4]  ms the fencing counter lives once seeded (the grace)
-- ARGV[5]  the release channel, redisson_lock__channel:{name}, for Redisson's "0" when nobody is
--          in line; ARGV[6] the fair lock's channel, relock_fair_channel:{name}, for the messages
--          that name a waiter (arguments, not keys: an ACL user needs channel grants for them,
--          `&`, not key grants, `~`). A Redisson `RLock` waiter decodes every message of the
--          release channel as a number: relock's own never go there.
--
-- Returns 1 (released: the lock was handed on, or is free and a wake-up was published: the
-- first waiter's field, or "0" when nobody is in its line), 0 (the hold is still there, count
-- decremented, or another field keeps the lock) or nil (this hold is not here: its lease ran
-- out, it was deleted or released).
local released = drop_hold(KEYS[1], ARGV[1], ARGV[2])
if released ~= 0 then
  -- The hold is gone (released now, or expired before): its token record too, if a handoff
  -- gave it the lock.
  forget_grant(KEYS[6], ARGV[1])
end
if released ~= 1 then
  return released
end
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
local q = line(KEYS[2], KEYS[3], KEYS[4], KEYS[6])
local now = now_ms()
evict(q, now)
-- Nobody in line: wake plain waiters of the same name (Redisson's RLock, relock's plain lock)
-- with Redisson's unlock message.
-- The lock was just seen free (above): pass_on need not look again.
if not pass_on(KEYS[1], KEYS[5], tonumber(ARGV[4]), ARGV[6], q, ARGV[3], now, true, true) then
  redis.call(ARGV[3], ARGV[5], 0)
end
return 1
