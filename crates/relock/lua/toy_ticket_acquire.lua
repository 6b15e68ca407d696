-- toy_ticket_acquire: a toy ticket lock's attempt (test-only). Waiters are served in the order
-- they joined the line; a free lock goes to the first of the line, or to anyone if it is empty.
--
-- KEYS[1]  the lock hash (the lock's name); field <client_id>:<n> -> hold count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- KEYS[3]  the line, toy_ticket_line:{name}: field -> arrival (server µs)
-- KEYS[4]  the line's heartbeats, toy_ticket_alive:{name}: field -> deadline (server ms)
-- ARGV[1]  lease in ms (PEXPIRE of the lock)
-- ARGV[2]  the new hold's field, <client_id>:<n>
-- ARGV[3]  ms the fencing counter lives once seeded (the grace)
-- ARGV[4]  "try" (never joins the line) or "wait" (joins it, or keeps the place)
-- ARGV[5]  ms a waiter keeps its place without another attempt
--
-- Returns
--   {1, token}   acquired (and out of the line)
--   {0, pttl}    held, and nobody waits ahead of this caller; pttl is the holder's lease left
--   {2, n}       n waiters are ahead of this caller (the lock may be free: the first takes it)
local lock, counter, line, alive = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local field, join, waiter_ms = ARGV[2], ARGV[4] == 'wait', tonumber(ARGV[5])
local t = redis.call('time')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)

-- Waiters that stopped attempting have left.
for _, gone in ipairs(redis.call('zrangebyscore', alive, '-inf', now_ms)) do
  redis.call('zrem', line, gone)
  redis.call('zrem', alive, gone)
end

if redis.call('exists', lock) == 0 then
  local first = redis.call('zrange', line, 0, 0)[1]
  if first == nil or first == field then
    local token = mint(counter, tonumber(ARGV[3]))
    redis.call('hset', lock, field, 1)
    redis.call('pexpire', lock, tonumber(ARGV[1]))
    redis.call('zrem', line, field)
    redis.call('zrem', alive, field)
    return {1, token}
  end
else
  ensure_lock(lock)
end

local rank = redis.call('zrank', line, field)
if join then
  if not rank then
    redis.call('zadd', line, now_us, field)
    rank = redis.call('zrank', line, field)
  end
  redis.call('zadd', alive, now_ms + waiter_ms, field)
  -- Every deadline in the line is at most this far: the line goes with its last waiter.
  redis.call('pexpire', line, waiter_ms)
  redis.call('pexpire', alive, waiter_ms)
end
local ahead = rank or redis.call('zcard', line)
if ahead == 0 then
  return {0, redis.call('pttl', lock)}
end
return {2, ahead}
