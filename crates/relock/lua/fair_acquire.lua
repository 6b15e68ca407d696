-- fair_acquire: take the fair lock afresh when it is free and the caller is first in line, or
-- (in "wait" mode) join the queue or stay in it. Never a re-entry (that is `reenter.lua`).
--
-- KEYS[1]  the lock hash; field <client_id>:<n> -> hold count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- KEYS[3]  the release channel, redisson_lock__channel:{name}
-- KEYS[4]  the queue, relock_fair_queue:{name}: owner -> ticket
-- KEYS[5]  the heartbeats, relock_fair_alive:{name}: owner -> deadline (server ms)
-- KEYS[6]  the ticket sequence, relock_fair_seq:{name}
-- ARGV[1]  lease in ms
-- ARGV[2]  the waiter's field, <client_id>:<n>: its place in line, and its hold's field if
--          granted
-- ARGV[3]  ms the fencing counter lives once seeded (the grace); never extended
-- ARGV[4]  heartbeat deadline in ms: how long the caller stays in line without a heartbeat
-- ARGV[5]  "wait": join (or stay in) the queue if not acquired; "try": never join
-- ARGV[6]  the caller's ticket from an earlier reply (0 if none): a waiter evicted while alive
--          (a long network stall) rejoins at its old place instead of the tail
-- ARGV[7]  the publish command: "publish" (or "spublish" on a cluster)
--
-- Returns
--   {1, token}                     acquired afresh (and out of the queue)
--   {0, bound, ticket, position, behind}
--                                  not acquired. bound: the most ms to sleep before asking
--                                  again: the holder's PTTL (-1: no expiry), or, when the lock
--                                  is free but another waiter is first, that waiter's heartbeat
--                                  deadline. ticket and position (0 = first) in "wait" mode,
--                                  0 and -1 in "try" mode. behind: 1 when the lock is free but
--                                  another waiter is first (it is about to take it, or dead).
local lease = tonumber(ARGV[1])
local counter_ttl = tonumber(ARGV[3])
local field = ARGV[2]
local now = now_ms()
-- HLEN fails with WRONGTYPE if the key is not a lock hash, before anything is changed.
redis.call('hlen', KEYS[1])
local evicted = evict(KEYS[4], KEYS[5], KEYS[6], now)

local pttl = redis.call('pttl', KEYS[1])
local first = head(KEYS[4], KEYS[5], KEYS[6])
if pttl == -2 and (first == false or first == field) then
  -- Minted first: a counter of another type fails before anything is written.
  local token = mint(KEYS[2], counter_ttl)
  dequeue(KEYS[4], KEYS[5], KEYS[6], field)
  redis.call('hset', KEYS[1], field, 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, token}
end

local bound = pttl
local behind = 0
if pttl == -2 then
  behind = 1
  -- Free, but someone else is first: it has until its heartbeat deadline to take it.
  bound = tonumber(redis.call('zscore', KEYS[5], first)) - now + 1
  if evicted > 0 then
    -- The eviction may have made it first just now, and nobody told it.
    redis.call(ARGV[7], KEYS[3], first)
  end
end
if ARGV[5] ~= 'wait' then
  return {0, bound, 0, -1, behind}
end

local ticket = redis.call('zscore', KEYS[4], field)
if not ticket then
  ticket = tonumber(ARGV[6])
  if ticket == 0 then
    ticket = redis.call('incr', KEYS[6])
  elseif tonumber(redis.call('get', KEYS[6]) or '0') < ticket then
    -- The sequence restarted while we were out of line: keep later arrivals behind us.
    redis.call('set', KEYS[6], ticket)
  end
  redis.call('zadd', KEYS[4], ticket, field)
end
local heartbeat = tonumber(ARGV[4])
redis.call('zadd', KEYS[5], now + heartbeat, field)
keep(heartbeat + 1000, KEYS[4], KEYS[5], KEYS[6])
return {0, bound, tonumber(ticket), redis.call('zrank', KEYS[4], field), behind}
