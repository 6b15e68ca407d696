-- fair_release: release.lua for a fair lock: when the lock becomes free, it is handed to the
-- first live waiter in its line, or that waiter is told (and only it), or plain waiters are
-- woken when the line is empty.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the line, relock_fair_line:{name} (lib/queue.lua)
-- KEYS[3]  the fencing counter (a handoff mints the next holder's token)
-- KEYS[4]  the grant record, relock_fair_grant:{name} (lib/queue.lua)
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
--
-- Every handoff runs this script, so it runs as few commands as it can (docs/performance.md
-- lists them, and why each is needed): the first waiter and what it asked for are read in two
-- commands, it leaves the line in one, and dead waiters are looked for only when the first one
-- is dead.
local field = ARGV[1]
local q = line(KEYS[2], KEYS[4])
local released = drop_hold(KEYS[1], field, ARGV[2])
if released ~= 1 then
  if released ~= 0 and granted(q, field) then
    -- The hold is gone (its lease ran out, it was deleted or released): its grant record too,
    -- if a handoff gave it the lock.
    redis.call('del', q.grant)
  end
  return released
end
if redis.call('exists', KEYS[1]) == 1 then
  -- Another field keeps the lock (a hash written by hand): the releaser's record goes.
  if granted(q, field) then
    redis.call('del', q.grant)
  end
  return 0
end
local now = now_ms()
local first, alive, first_lease = head(q)
if first and tonumber(alive) <= now then
  -- The first waiter is dead: it goes, with every other dead waiter, before the lock is handed
  -- on. Dead waiters behind a live one stay until they are first (they hold up nobody before),
  -- or a heartbeat evicts them.
  evict(q, now)
  first, alive, first_lease = head(q)
end
first_lease = tonumber(first_lease or false)
if first == field then
  -- The releaser is in line itself under the same field: it asked for that lease while it
  -- waited, not for this hold, and is told.
  first_lease = nil
end
if not (first_lease and first_lease > 0) then
  -- Nobody in line, or a first waiter that did not ask to be handed the lock. The lock is free:
  -- the grant record of the releaser (the last waiter handed it, if any) is of no use any more.
  redis.call('del', q.grant)
  if not first then
    -- Wake plain waiters of the same name (Redisson's RLock, relock's plain lock) with
    -- Redisson's unlock message.
    redis.call(ARGV[3], ARGV[5], 0)
  else
    -- It is told, and comes to take it.
    redis.call(ARGV[3], ARGV[6], first)
  end
  return 1
end
-- Its lease is its first lease cut at its heartbeat deadline: a waiter that died in line
-- then holds the lock no longer than it would have held up the line (docs/safety.md). The
-- grant record written with it replaces the releaser's.
grant(KEYS[1], KEYS[3], tonumber(ARGV[4]), ARGV[6], q, ARGV[3], first,
  math.min(first_lease, tonumber(alive) - now))
return 1
