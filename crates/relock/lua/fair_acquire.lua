-- fair_acquire: take the fair lock afresh when it is free and the caller is first in line, or
-- (in "wait" mode) join the queue or stay in it. Never a re-entry (that is `reenter.lua`).
--
-- KEYS[1]  the lock hash; field <client_id>:<n> -> hold count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- KEYS[3]  the line, relock_fair_line:{name}: tickets, deadlines, first leases (lib/queue.lua)
-- KEYS[4]  the grant record, relock_fair_grant:{name} (lib/queue.lua)
-- ARGV[1]  lease in ms
-- ARGV[2]  the waiter's field, <client_id>:<n>: its place in line, and its hold's field if
--          granted
-- ARGV[3]  ms the fencing counter lives once seeded (the grace); never extended
-- ARGV[4]  heartbeat deadline in ms: how long the caller stays in line without a heartbeat
-- ARGV[5]  "wait": join (or stay in) the queue if not acquired; "try": never join
-- ARGV[6]  the caller's ticket from an earlier reply (0 if none)
-- ARGV[7]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[8]  the first lease in ms the caller asks for if a release hands it the lock while it
--          waits (direct handoff); 0: never hand it the lock, tell it to come (absent: 0)
-- ARGV[9]  "1" if a reply already showed this field in line: a field that is not in line any
--          more (evicted, or handed the lock and that lease ran out) never rejoins under the
--          same field, so that a field is handed the lock at most once (absent: "0")
-- ARGV[10] the fair lock's channel, relock_fair_channel:{name}, for its messages that name a
--          waiter (an argument, not a key: an ACL user needs a channel grant
--          for it, `&`, not a key grant, `~`)
-- ARGV[11] (optional) the field this one replaces: a waiter that rejoins under a new field
--          after an attempt whose outcome was unknown names its retired field here
--
-- Returns
--   {1, token}                     acquired afresh (and out of the queue)
--   {3, token, pttl}               a release handed this field the lock before this call (its
--                                  message was lost or not read yet): token is the one minted
--                                  then, pttl the lease it has left
--   {0, bound, ticket, line, behind}
--                                  not acquired. bound: the most ms to sleep before asking
--                                  again: the holder's PTTL (-1: no expiry), or, when the lock
--                                  is free but another waiter is first, that waiter's heartbeat
--                                  deadline. ticket, and line 0 (in line), in "wait" mode; 0
--                                  and -1 in "try" mode; line -2: out of line and not rejoined
--                                  (ARGV[9]): rejoin under a new field with the ticket. Not the
--                                  place in line: nothing reads it (`Lock::queue_position` asks
--                                  the server), and it would cost a ZRANK on every join.
--                                  behind: 1 when the lock is free but another waiter is first
--                                  (it is about to take it, or dead).
--
-- A join runs on every handoff (the releaser asking again), so it reads only what it needs
-- (docs/performance.md lists its commands): the lock's shape check gives its PTTL and fields
-- (no second PTTL, no HEXISTS); while the lock is held, neither the first waiter nor the dead
-- are looked for (a dead waiter harms nobody until it is first, and the release, an acquire
-- that finds the lock free, and every heartbeat evict it then); the waiter's ticket, deadline
-- and first lease go into the line with one ZADD, and the line is kept with one PEXPIRE.

local lease = tonumber(ARGV[1])
local counter_ttl = tonumber(ARGV[3])
local field = ARGV[2]
local q = line(KEYS[3], KEYS[4])
-- HRANDFIELD fails with WRONGTYPE if the key is not a hash, before anything is changed.
local pttl, holds = ensure_lock(KEYS[1])
for i = 1, #holds, 2 do
  if holds[i] == field then
    -- A field is asked for by one acquisition only and never re-entered here, so this field's
    -- hold was written by a handoff (lib/handoff.lua), which recorded its token.
    local token = granted(q, field)
    if not token then
      return redis.error_reply('ERR relock: a hold under this field without its handoff record')
    end
    return {3, token, pttl}
  end
end
-- The server clock, read once, when first needed: `clock()` in ms (deadlines), `clock_us()` in
-- µs (tickets).
local time = nil
local function clock_us()
  if not time then
    time = redis.call('time')
  end
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end
local function clock()
  clock_us()
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- While the lock is free: the first waiter, after evicting every dead waiter if it is dead
-- (the lock is never held up behind a dead waiter, nor granted past a live one).
local free = pttl == -2
local evicted = 0
local first, alive, first_lease
if free then
  first, alive, first_lease = head(q)
  if first and tonumber(alive) <= clock() then
    evicted = evict(q, clock())
    first, alive, first_lease = head(q)
  end
end
local heartbeat = tonumber(ARGV[4])
local asks = first_lease_ms(ARGV[8])
-- The members a join writes for this field: its ticket, its deadline and, if it asks to be
-- handed the lock, its first lease. Scores as integers in full (a ticket has 16 digits).
local function entry(ticket)
  local e = {string.format('%.0f', ticket), field,
    string.format('%.0f', clock() + heartbeat), 'alive:' .. field}
  if asks > 0 then
    e[5] = string.format('%.0f', asks)
    e[6] = 'lease:' .. field
  end
  return e
end
local retired = ARGV[11] or ''
if ARGV[5] == 'wait' and tonumber(ARGV[6]) > 0 and retired ~= '' and retired ~= field
    and not redis.call('zscore', q.key, field) and redis.call('zscore', q.key, retired) then
  -- A waiter that rejoins under a new field (after an attempt whose outcome was unknown, its
  -- old field retired) takes its retired field's place at once, with its ticket: that field's
  -- leave may still be on its way, and it must not be found first (handed or told the lock)
  -- ahead of the waiter itself, nor the waiter behind it fall first meanwhile. Only the field
  -- it names goes, so a late script of the retired field can never remove the new one.
  dequeue(q, retired)
  redis.call('zadd', q.key, unpack(entry(tonumber(ARGV[6]))))
  if free then
    first, alive, first_lease = head(q)
  end
end

if free and (first == false or first == field) then
  -- Minted first: a counter of another type fails before anything is written.
  local token = mint(KEYS[2], counter_ttl)
  dequeue(q, field)
  -- The grant record of the waiter handed the lock last: that hold has ended.
  redis.call('del', q.grant)
  redis.call('hset', KEYS[1], field, 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, token}
end

local bound = pttl
local behind = 0
if free then
  -- Free, but someone else is first: hand it the lock if it asked for that (its lease ran out
  -- without a release, or a release could not reach it), else tell it if the eviction may have
  -- made it first just now. Either way it has until its heartbeat deadline to take it.
  pass_on(KEYS[1], KEYS[2], counter_ttl, ARGV[10], q, ARGV[7], clock(), evicted > 0, true, first,
    alive, first_lease)
  bound = redis.call('pttl', KEYS[1])
  if bound == -2 then
    behind = 1
    bound = tonumber(alive) - clock() + 1
  end
end
if ARGV[5] ~= 'wait' then
  return {0, bound, 0, -1, behind}
end

local given = tonumber(ARGV[6])
-- A new ticket: the server clock in µs, or one past the last ticket in line if that is later
-- (tickets only rise while a line lasts, whatever the clock does). A new line starts at the
-- clock, above every ticket of an earlier line, so that a waiter whose entry went meanwhile (a
-- retired field, an eviction) rejoins with its ticket ahead of those who came later.
-- `fresh`: the line did not exist before this join (it has no time to live yet).
local fresh = false
local function next_ticket()
  local last = redis.call('zrange', q.key, -1, -1, 'withscores')
  local ticket = clock_us()
  if last[2] == nil then
    fresh = true
  elseif tonumber(last[2]) >= ticket then
    ticket = tonumber(last[2]) + 1
  end
  return ticket
end
local ticket
if given == 0 and ARGV[9] ~= '1' then
  -- A first join (every handoff's releaser asking again): a new ticket, and the field in line
  -- with it unless it is there already (an earlier join's reply was lost: it keeps its place,
  -- and its deadline and first lease are written again).
  ticket = next_ticket()
  local e = entry(ticket)
  if redis.call('zadd', q.key, 'NX', unpack(e)) < #e / 2 then
    ticket = tonumber(redis.call('zscore', q.key, field) or ticket)
    redis.call('zadd', q.key, unpack(entry(ticket)))
  end
else
  ticket = redis.call('zscore', q.key, field)
  if not ticket then
    ticket = given
    if ARGV[9] == '1' then
      -- Out of line (evicted, or handed the lock whose lease then ran out): the caller rejoins
      -- under a new field, so that a late handoff message to this one cannot be taken for a
      -- new grant.
      return {0, bound, ticket, -2, behind}
    end
    if ticket == 0 then
      ticket = next_ticket()
    end
  end
  ticket = tonumber(ticket)
  redis.call('zadd', q.key, unpack(entry(ticket)))
end
keep(heartbeat + 1000, q, fresh)
return {0, bound, ticket, 0, behind}
