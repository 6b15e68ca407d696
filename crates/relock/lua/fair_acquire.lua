-- fair_acquire: take the fair lock afresh when it is free and the caller is first in line, or
-- (in "wait" mode) join the queue or stay in it. Never a re-entry (that is `reenter.lua`).
--
-- KEYS[1]  the lock hash; field <client_id>:<n> -> hold count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- KEYS[3]  the queue, relock_fair_queue:{name}: owner -> ticket
-- KEYS[4]  the heartbeats, relock_fair_alive:{name}: owner -> deadline (server ms)
-- KEYS[5]  the ticket sequence, relock_fair_seq:{name}
-- KEYS[6]  the handoff hash, relock_fair_handoff:{name} (lib/queue.lua)
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
-- that finds the lock free, and every heartbeat evict it then); the server clock is read only
-- when a deadline needs it.

local lease = tonumber(ARGV[1])
local counter_ttl = tonumber(ARGV[3])
local field = ARGV[2]
local q = line(KEYS[3], KEYS[4], KEYS[5], KEYS[6])
-- HLEN fails with WRONGTYPE if the key is not a lock hash, before anything is changed.
local pttl, holds = ensure_lock(KEYS[1])
for i = 1, #holds, 2 do
  if holds[i] == field then
    -- A field is asked for by one acquisition only and never re-entered here, so this field's
    -- hold was written by a handoff (lib/handoff.lua), which recorded its token.
    local token = redis.call('hget', KEYS[6], field)
    if not token then
      return redis.error_reply('ERR relock: a hold under this field without its handoff record')
    end
    return {3, tonumber(token), pttl}
  end
end
-- The server clock, read once, when first needed: `clock()` in ms (deadlines), `clock_us()` in
-- µs (a new ticket sequence's seed).
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
local first, alive
if free then
  first, alive = head(q)
  if first and tonumber(alive) <= clock() then
    evicted = evict(q, clock())
    first, alive = head(q)
  end
end
local retired = ARGV[11] or ''
if ARGV[5] == 'wait' and tonumber(ARGV[6]) > 0 and retired ~= '' and retired ~= field
    and not redis.call('zscore', KEYS[3], field) and redis.call('zscore', KEYS[3], retired) then
  -- A waiter that rejoins under a new field (after an attempt whose outcome was unknown, its
  -- old field retired) takes its retired field's place at once, with its ticket: that field's
  -- leave may still be on its way, and it must not be found first (handed or told the lock)
  -- ahead of the waiter itself, nor the waiter behind it fall first meanwhile. Only the field
  -- it names goes, so a late script of the retired field can never remove the new one.
  dequeue(q, retired)
  redis.call('zadd', KEYS[3], ARGV[6], field)
  redis.call('zadd', KEYS[4], clock() + tonumber(ARGV[4]), field)
  if free then
    first, alive = head(q)
  end
end

if free and (first == false or first == field) then
  -- Minted first: a counter of another type fails before anything is written.
  local token = mint(KEYS[2], counter_ttl)
  dequeue(q, field)
  forget_last_grant(q)
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
    alive)
  bound = redis.call('pttl', KEYS[1])
  if bound == -2 then
    behind = 1
    bound = tonumber(alive) - clock() + 1
  end
end
if ARGV[5] ~= 'wait' then
  return {0, bound, 0, -1, behind}
end

local heartbeat = tonumber(ARGV[4])
local given = tonumber(ARGV[6])
-- The join's writes, each of a line key that a join may be the first to touch while the lock is
-- held. A line key of another type (written by someone else under relock's own names) fails one
-- of them with WRONGTYPE after others ran: what this join added goes again before the error is
-- raised, so that a refused join leaves no key or entry of its own behind, and none without a
-- time to live (`keep`, below, is not reached then). `undo`: the command that takes back what
-- `write` added, if it added something.
local added = {}
local function write(undo, ...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then
    for i = #added, 1, -1 do
      redis.call(unpack(added[i]))
    end
    error(r)
  end
  if undo and r == 1 then
    added[#added + 1] = undo
  end
  return r
end
-- A new ticket: the next of the sequence.
local function next_ticket()
  local ticket = write(nil, 'incr', KEYS[5])
  if ticket < 1000000000000000 then
    -- A new sequence (the line emptied, and `dequeue`/`evict` dropped it, or it expired)
    -- starts at the server clock in µs, as the fencing counter does (lib/mint.lua): above
    -- every ticket of an earlier sequence, so that a waiter whose entry went meanwhile (a
    -- retired field, an eviction) rejoins with its ticket ahead of those who came later.
    ticket = clock_us()
    redis.call('set', KEYS[5], string.format('%.0f', ticket))
    added[#added + 1] = {'del', KEYS[5]}
  end
  return ticket
end
local ticket
local reseed = nil
if given == 0 and ARGV[9] ~= '1' then
  -- A first join (every handoff's releaser asking again): a new ticket, and the field in line
  -- with it unless it is there already (an earlier join's reply was lost: it keeps its place).
  ticket = next_ticket()
  if write({'zrem', KEYS[3], field}, 'zadd', KEYS[3], 'NX', ticket, field) == 0 then
    ticket = redis.call('zscore', KEYS[3], field)
  end
else
  ticket = redis.call('zscore', KEYS[3], field)
  if not ticket then
    ticket = given
    if ARGV[9] == '1' then
      -- Out of line (evicted, or handed the lock whose lease then ran out): the caller rejoins
      -- under a new field, so that a late handoff message to this one cannot be taken for a
      -- new grant. The token record of a grant that ran out untaken goes now (the field is
      -- neither in the lock nor in line).
      forget_grant(KEYS[6], field)
      return {0, bound, ticket, -2, behind}
    end
    if ticket == 0 then
      ticket = next_ticket()
    elseif tonumber(redis.call('get', KEYS[5]) or '0') < ticket then
      -- The sequence restarted while we were out of line: keep later arrivals behind us (set
      -- once nothing more can be refused: SET drops the key's time to live, which `keep`
      -- gives back).
      reseed = ARGV[6]
    end
    write({'zrem', KEYS[3], field}, 'zadd', KEYS[3], ticket, field)
  end
end
write({'zrem', KEYS[4], field}, 'zadd', KEYS[4], clock() + heartbeat, field)
local first_lease = tonumber(ARGV[8] or '0')
if first_lease > 0 then
  write(nil, 'hset', KEYS[6], field, first_lease)
end
if reseed then
  redis.call('set', KEYS[5], reseed)
end
keep(heartbeat + 1000, q)
return {0, bound, tonumber(ticket), 0, behind}
