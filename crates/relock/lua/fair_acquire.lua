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
--   {0, bound, ticket, position, behind}
--                                  not acquired. bound: the most ms to sleep before asking
--                                  again: the holder's PTTL (-1: no expiry), or, when the lock
--                                  is free but another waiter is first, that waiter's heartbeat
--                                  deadline. ticket and position (0 = first) in "wait" mode,
--                                  0 and -1 in "try" mode; position -2: out of line and not
--                                  rejoined (ARGV[9]): rejoin under a new field with the
--                                  ticket. behind: 1 when the lock is free but another waiter
--                                  is first (it is about to take it, or dead).
local lease = tonumber(ARGV[1])
local counter_ttl = tonumber(ARGV[3])
local field = ARGV[2]
local q = line(KEYS[3], KEYS[4], KEYS[5], KEYS[6])
local now = now_ms()
-- HLEN fails with WRONGTYPE if the key is not a lock hash, before anything is changed.
ensure_lock(KEYS[1])
if redis.call('hexists', KEYS[1], field) == 1 then
  -- A field is asked for by one acquisition only and never re-entered here, so this field's
  -- hold was written by a handoff (lib/handoff.lua), which recorded its token.
  local token = redis.call('hget', KEYS[6], field)
  if not token then
    return redis.error_reply('ERR relock: a hold under this field without its handoff record')
  end
  return {3, tonumber(token), redis.call('pttl', KEYS[1])}
end
local evicted = evict(q, now)
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
  redis.call('zadd', KEYS[4], now + tonumber(ARGV[4]), field)
end

local pttl = redis.call('pttl', KEYS[1])
local first = head(q)
if pttl == -2 and (first == false or first == field) then
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
if pttl == -2 then
  -- Free, but someone else is first: hand it the lock if it asked for that (its lease ran out
  -- without a release, or a release could not reach it), else tell it if the eviction may have
  -- made it first just now. Either way it has until its heartbeat deadline to take it.
  pass_on(KEYS[1], KEYS[2], counter_ttl, ARGV[10], q, ARGV[7], now, evicted > 0)
  bound = redis.call('pttl', KEYS[1])
  if bound == -2 then
    behind = 1
    bound = tonumber(redis.call('zscore', KEYS[4], first)) - now + 1
  end
end
if ARGV[5] ~= 'wait' then
  return {0, bound, 0, -1, behind}
end

local ticket = redis.call('zscore', KEYS[3], field)
if not ticket then
  ticket = tonumber(ARGV[6])
  if ARGV[9] == '1' then
    -- Out of line (evicted, or handed the lock whose lease then ran out): the caller rejoins
    -- under a new field, so that a late handoff message to this one cannot be taken for a new
    -- grant. The token record of a grant that ran out untaken goes now (the field is neither
    -- in the lock nor in line).
    forget_grant(KEYS[6], field)
    return {0, bound, ticket, -2, behind}
  end
  if ticket == 0 then
    ticket = redis.call('incr', KEYS[5])
    if ticket < 1000000000000000 then
      -- A new sequence (the line emptied, and `dequeue`/`evict` dropped it, or it expired)
      -- starts at the server clock in µs, as the fencing counter does (lib/mint.lua): above
      -- every ticket of an earlier sequence, so that a waiter whose entry went meanwhile (a
      -- retired field, an eviction) rejoins with its ticket ahead of those who came later.
      local t = redis.call('time')
      ticket = tonumber(t[1]) * 1000000 + tonumber(t[2])
      redis.call('set', KEYS[5], string.format('%.0f', ticket))
    end
  elseif tonumber(redis.call('get', KEYS[5]) or '0') < ticket then
    -- The sequence restarted while we were out of line: keep later arrivals behind us.
    redis.call('set', KEYS[5], ARGV[6])
  end
  redis.call('zadd', KEYS[3], ticket, field)
end
local heartbeat = tonumber(ARGV[4])
redis.call('zadd', KEYS[4], now + heartbeat, field)
local first_lease = tonumber(ARGV[8] or '0')
if first_lease > 0 then
  redis.call('hset', KEYS[6], field, first_lease)
end
keep(heartbeat + 1000, q)
return {0, bound, tonumber(ticket), redis.call('zrank', KEYS[3], field), behind}
