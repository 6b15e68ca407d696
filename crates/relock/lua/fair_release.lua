-- fair_release: release.lua for a fair lock: when the lock becomes free, it is handed to the
-- first live waiter in its line, or that waiter is told (and only it), or plain waiters are
-- woken when the line is empty.
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
--
-- Every handoff runs this script, so it runs as few commands as it can (docs/performance.md
-- lists them, and why each is needed): the handoff hash is read once and written once, the line
-- is dropped with one DEL when its last waiter is handed the lock, and dead waiters are looked
-- for only when the first one is dead.
local field = ARGV[1]
local released = drop_hold(KEYS[1], field, ARGV[2])
if released ~= 1 then
  if released ~= 0 then
    -- The hold is gone (its lease ran out, it was deleted or released): its token record
    -- too, if a handoff gave it the lock.
    forget_grant(KEYS[6], field)
  end
  return released
end
if redis.call('exists', KEYS[1]) == 1 then
  -- Another field keeps the lock.
  forget_grant(KEYS[6], field)
  return 0
end
local q = line(KEYS[2], KEYS[3], KEYS[4], KEYS[6])
local now = now_ms()
local first, alive, alone, second = head(q)
if first and tonumber(alive) <= now then
  -- The first waiter is dead: it goes, with every other dead waiter, before the lock is handed
  -- on. Dead waiters behind a live one stay until they are first (they hold up nobody before),
  -- or a heartbeat evicts them.
  evict(q, now)
  first, alive, alone, second = head(q)
end
if not first then
  -- Nobody in line: wake plain waiters of the same name (Redisson's RLock, relock's plain
  -- lock) with Redisson's unlock message.
  forget_grant(q.handoff, field)
  redis.call(ARGV[3], ARGV[5], 0)
  return 1
end
-- The handoff hash once: the first waiter's first lease (a grant's token record is >= 10^15),
-- the owner handed the lock last, and the entry of the waiter behind the first, if any (it
-- shows whether the hash outlives the writes below). The releaser's own record (its token, if
-- a handoff gave it the lock) goes either way; the first waiter's first lease is its own only
-- if it is not the releaser.
local got
if alone then
  got = redis.call('hmget', q.handoff, first, 'relock:last-grant')
else
  got = redis.call('hmget', q.handoff, first, 'relock:last-grant', second)
end
local first_lease, last = tonumber(got[1] or false), got[2]
if first == field then
  first_lease = nil
end
if not (first_lease and first_lease > 0 and first_lease < 1000000000000000) then
  -- It did not ask to be handed the lock: it is told, and comes to take it.
  redis.call('hdel', q.handoff, field)
  if last == field then
    redis.call('hdel', q.handoff, 'relock:last-grant')
  end
  redis.call(ARGV[3], ARGV[6], first)
  return 1
end
-- Its lease is its first lease cut at its heartbeat deadline: a waiter that died in line
-- then holds the lock no longer than it would have held up the line (docs/safety.md).
local deadline = tonumber(alive)
local lease = math.min(first_lease, deadline - now)
-- Minted first: a counter of another type fails before the lock is written.
local token = mint(KEYS[5], tonumber(ARGV[4]))
local t = string.format('%.0f', token)
if alone then
  -- It was the line's last waiter: the line goes with it.
  redis.call('del', q.queue, q.alive, q.seq)
else
  redis.call('zrem', q.queue, first)
  redis.call('zrem', q.alive, first)
end
-- One HDEL for every record that goes: the releaser's, the first waiter's first lease (cleared,
-- not written over, so that a hash left with only this grant lives the grant's lease, below,
-- not the line's), the last-grant pointer, and the token record of the owner it named (its
-- hold has ended: the lock is granted again). A first lease under that field (it rejoined the
-- line under the same field) stays.
local gone = {field, first, 'relock:last-grant'}
if last and last ~= field and last ~= first then
  local value = tonumber(redis.call('hget', q.handoff, last) or false)
  if value and value >= 1000000000000000 then
    gone[4] = last
  end
end
redis.call('hdel', q.handoff, unpack(gone))
redis.call('hset', KEYS[1], first, 1)
redis.call('pexpire', KEYS[1], lease)
redis.call('hset', q.handoff, first, t, 'relock:last-grant', first)
-- The record lives at least the hold's lease. The hash had the first waiter's first lease, so it
-- lives past that waiter's heartbeat deadline + 1 s (every join and heartbeat that writes a
-- deadline keeps the line's keys that long: lib/queue.lua `keep`), past the lease. So it needs
-- a time to live only if the HDEL above emptied it and the HSET made it again, with none: never
-- when the waiter behind the first keeps its first lease in it (no command then), else one
-- PEXPIRE NX, which sets none on a hash that kept its own.
local kept = tonumber(got[3] or false)
if not (kept and kept > 0 and kept < 1000000000000000 and second ~= field) then
  redis.call('pexpire', q.handoff, lease, 'NX')
end
redis.call(ARGV[3], ARGV[6], first .. '=' .. t)
return 1
