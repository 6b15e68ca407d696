-- The fair lock's line (fair_*.lua, status.lua). A line is one sorted set, beside the lock's
-- hash and with its hash tag, `relock_fair_line:{name}`, that holds three kinds of member, told
-- apart by their names and kept apart by their scores:
--   <field>        -> its ticket: the server clock in µs when it joined (>= 10^15), so that the
--                     line's order is the order of arrival
--   alive:<field>  -> its heartbeat deadline, server ms (between 10^12 and 10^15)
--   lease:<field>  -> the first lease (ms, below 10^12) it asks for if a release hands it the
--                     lock while it waits (direct handoff); absent: it is told to come instead
-- A waiter's field is `<client_id>:<n>` with no other colon (the client refuses a client id
-- with one), so no field is ever named like another's `alive:` or `lease:` member. One key
-- for the whole line: a join writes it with one ZADD and keeps it with one PEXPIRE, and a
-- handoff takes the first waiter out of it with one ZREM.
--
-- Beside it, `relock_fair_grant:{name}`, a string: `<field>=<token>` of the last waiter a
-- release (or a leave, a heartbeat, an acquire) handed the lock, living as long as that lease:
-- that waiter's next attempt reads its token there if the handoff's message was lost.

local TICKET_MIN = 1000000000000000
local DEADLINE_MIN = 1000000000000

local function line(key, grant)
  return {key = key, grant = grant}
end

-- Server time in ms: deadlines are judged on one clock, never on the clients' clocks.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A first lease as the line keeps it: at least 0 (0: no handoff), below the deadlines' scores.
-- Never longer than the heartbeat deadline that cuts it anyway.
local function first_lease_ms(ms)
  return math.max(0, math.min(tonumber(ms or '0') or 0, DEADLINE_MIN - 1))
end

-- Takes `owner` out of the line (its ticket, deadline and first lease). Returns whether
-- anything of it was there.
local function dequeue(q, owner)
  return redis.call('zrem', q.key, owner, 'alive:' .. owner, 'lease:' .. owner) > 0
end

-- Evicts every waiter whose heartbeat deadline has passed, wherever it is in the line.
-- Returns how many went.
local function evict(q, now)
  local dead = redis.call('zrange', q.key, DEADLINE_MIN, now, 'byscore')
  if #dead == 0 then
    return 0
  end
  local gone = {}
  for _, member in ipairs(dead) do
    local owner = string.sub(member, 7)
    gone[#gone + 1] = owner
    gone[#gone + 1] = member
    gone[#gone + 1] = 'lease:' .. owner
  end
  for i = 1, #gone, 3000 do
    redis.call('zrem', q.key, unpack(gone, i, math.min(i + 2999, #gone)))
  end
  return #dead
end

-- The first waiter in line (false if none), its heartbeat deadline and its first lease (false
-- if it asked for none), in two reads. An entry with no heartbeat (the key was tampered with)
-- cannot prove it lives, so it is dropped rather than allowed to block.
local function head(q)
  while true do
    local first = redis.call('zrange', q.key, TICKET_MIN, '+inf', 'byscore', 'limit', 0, 1)[1]
    if first == nil then
      return false
    end
    local got = redis.call('zmscore', q.key, 'alive:' .. first, 'lease:' .. first)
    if got[1] then
      return first, got[1], got[2]
    end
    dequeue(q, first)
  end
end

-- Keeps the line alive for at least `ms` more; never shortens it. When every waiter is gone
-- (crashed), the key expires by itself. One PEXPIRE when the line has a shorter time to live
-- (GT lengthens it), or when `fresh` (this call made the key: it has none); a second (NX) only
-- when GT changed nothing, for a key that has no time to live (GT takes that for an infinite
-- one) or already has `ms` or more, where it changes nothing.
local function keep(ms, q, fresh)
  if fresh then
    redis.call('pexpire', q.key, ms)
  elseif redis.call('pexpire', q.key, ms, 'GT') == 0 then
    redis.call('pexpire', q.key, ms, 'NX')
  end
end

-- The token of `owner`'s grant, if the grant record names it (false if not). A key of another
-- type under the record's name (relock's own) holds no record.
local function granted(q, owner)
  local record = redis.pcall('get', q.grant)
  if type(record) == 'string' then
    local who, token = string.match(record, '^(.*)=(%d+)$')
    if who == owner then
      return tonumber(token)
    end
  end
  return false
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
