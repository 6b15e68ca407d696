-- The fair queue (fair_*.lua, and release/force_unlock when given the queue keys).
-- queue: owner -> ticket (arrival order); alive: owner -> heartbeat deadline (server ms);
-- seq: the ticket sequence. All three share the lock's hash tag.

-- Server time in ms: deadlines are judged on one clock, never on the clients' clocks.
local function now_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Takes `owner` out of the queue; drops the sequence with the last entry.
local function dequeue(queue, alive, seq, owner)
  local removed = redis.call('zrem', queue, owner)
  redis.call('zrem', alive, owner)
  if redis.call('zcard', queue) == 0 then
    redis.call('del', alive, seq)
  end
  return removed
end

-- Evicts every waiter whose heartbeat deadline has passed, wherever it is in the queue.
-- Returns how many went.
local function evict(queue, alive, seq, now)
  local dead = redis.call('zrangebyscore', alive, '-inf', now)
  for _, owner in ipairs(dead) do
    redis.call('zrem', queue, owner)
  end
  if #dead > 0 then
    redis.call('zremrangebyscore', alive, '-inf', now)
    if redis.call('zcard', queue) == 0 then
      redis.call('del', alive, seq)
    end
  end
  return #dead
end

-- The first waiter in line (false if none). An entry with no heartbeat (the keys were
-- tampered with) cannot prove it lives, so it is dropped rather than allowed to block.
local function head(queue, alive, seq)
  while true do
    local first = redis.call('zrange', queue, 0, 0)[1]
    if first == nil then
      return false
    end
    if redis.call('zscore', alive, first) then
      return first
    end
    dequeue(queue, alive, seq, first)
  end
end

-- Keeps the queue keys alive for at least `ms` more; never shortens them. When every waiter
-- is gone (crashed), the keys expire by themselves.
local function keep(ms, queue, alive, seq)
  for _, key in ipairs({queue, alive, seq}) do
    if redis.call('pttl', key) < ms then
      redis.call('pexpire', key, ms)
    end
  end
end

-- When the lock is free, tells the first waiter (and only it) by publishing its owner field.
-- Returns that waiter, or false.
local function wake_head(lock, channel, queue, alive, seq, publish)
  if redis.call('exists', lock) == 1 then
    return false
  end
  local first = head(queue, alive, seq)
  if first then
    redis.call(publish, channel, first)
  end
  return first
end

