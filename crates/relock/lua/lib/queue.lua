-- The fair queue (fair_*.lua, and force_unlock when given the queue keys). A line is a table
-- of its keys, all with the lock's hash tag (`line`):
--   queue:   owner -> ticket (arrival order)
--   alive:   owner -> heartbeat deadline (server ms)
--   seq:     the ticket sequence
--   handoff: owner -> the first lease (ms) it asks for if a release hands it the lock while it
--            waits (it opted into direct handoff); once handed the lock, owner -> the token
--            minted for it (tokens are >= 10^15, leases far below), until its hold is released
--            or the next handoff (lib/handoff.lua); and "relock:last-grant" -> the owner last
--            handed the lock, whose record that next handoff drops. Absent (nil) when a caller
--            passed no such key.

local function line(queue, alive, seq, handoff)
  return {queue = queue, alive = alive, seq = seq, handoff = handoff}
end

-- Server time in ms: deadlines are judged on one clock, never on the clients' clocks.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Drops `owner`'s entry in the handoff hash (its first lease, or its token record), and the
-- "last grant" pointer if it names `owner`, so that an idle hash empties (and goes).
local function forget_grant(handoff, owner)
  redis.call('hdel', handoff, owner)
  if redis.call('hget', handoff, 'relock:last-grant') == owner then
    redis.call('hdel', handoff, 'relock:last-grant')
  end
end

-- Takes `owner` out of the queue (and its handoff entry); drops the sequence with the last
-- entry.
local function dequeue(q, owner)
  local removed = redis.call('zrem', q.queue, owner)
  redis.call('zrem', q.alive, owner)
  if q.handoff then
    forget_grant(q.handoff, owner)
  end
  if redis.call('zcard', q.queue) == 0 then
    redis.call('del', q.alive, q.seq)
  end
  return removed
end

-- Evicts every waiter whose heartbeat deadline has passed, wherever it is in the queue.
-- Returns how many went.
local function evict(q, now)
  local dead = redis.call('zrangebyscore', q.alive, '-inf', now)
  for _, owner in ipairs(dead) do
    redis.call('zrem', q.queue, owner)
    if q.handoff then
      redis.call('hdel', q.handoff, owner)
    end
  end
  if #dead > 0 then
    redis.call('zremrangebyscore', q.alive, '-inf', now)
    if redis.call('zcard', q.queue) == 0 then
      redis.call('del', q.alive, q.seq)
    end
  end
  return #dead
end

-- The first waiter in line (false if none), its heartbeat deadline, whether it is alone in
-- line and the waiter behind it (read in the same ZRANGE: a handoff to the last waiter drops
-- the line with one DEL). An entry with no heartbeat (the keys were tampered with) cannot prove
-- it lives, so it is dropped rather than allowed to block.
local function head(q)
  while true do
    local two = redis.call('zrange', q.queue, 0, 1)
    local first = two[1]
    if first == nil then
      return false
    end
    local alive = redis.call('zscore', q.alive, first)
    if alive then
      return first, alive, two[2] == nil, two[2]
    end
    dequeue(q, first)
  end
end

-- Keeps the line's keys alive for at least `ms` more; never shortens them. When every waiter
-- is gone (crashed), the keys expire by themselves. One PEXPIRE per key in the common case (a
-- key with less than `ms` left: GT lengthens it); a second (NX) only for a key that has no
-- time to live yet (this call created it: GT takes that for an infinite one) or already has
-- `ms` or more, where it changes nothing.
local function keep(ms, q)
  for _, key in ipairs({q.queue, q.alive, q.seq, q.handoff}) do
    if redis.call('pexpire', key, ms, 'GT') == 0 then
      redis.call('pexpire', key, ms, 'NX')
    end
  end
end

-- When the lock is free, tells the first waiter (and only it) by publishing its owner field.
-- Returns that waiter, or false.
local function wake_head(lock, channel, q, publish)
  if redis.call('exists', lock) == 1 then
    return false
  end
  local first = head(q)
  if first then
    redis.call(publish, channel, first)
  end
  return first
end
