-- The fair lock's direct handoff (after lib/mint.lua and lib/queue.lua): a leave, a heartbeat or
-- an acquire that finds the lock free grants it to the first live waiter itself, instead of
-- telling it to come and take it. A release grants it the same way in fair_release.lua, which
-- runs on every handoff and so reads and writes the handoff hash once instead.
--
-- If the first waiter asked for it (it has a first lease in q.handoff), it is granted as its
-- own acquire would grant it: its token minted, its hold (count 1) written, out of the line.
-- Its lease is that first lease, cut at its heartbeat deadline: a waiter that died in line
-- then holds the lock no longer than it would have held up the line (docs/safety.md). The
-- token is kept under its field in q.handoff (so that its next acquire, if the message is
-- lost, reports this grant) and published as "<field>=<token>", which tells it that it holds
-- the lock. A first waiter that did not ask (a relock without handoff) is told "<field>", as
-- before, when `tell` is true. Nothing happens while the lock is held.
-- Returns the first waiter, or false.
-- Call when the free lock is granted to anyone: the hold of the owner handed it last has
-- ended, so its token record is of no use any more (its own next acquire finds it out of line
-- either way). Without this, an owner that died before releasing kept its record for as long
-- as the line stayed busy; now the hash holds at most one record (review of the handoff).
local function forget_last_grant(q)
  if not q.handoff then
    return
  end
  local last = redis.call('hget', q.handoff, 'relock:last-grant')
  if last then
    -- Only a token record goes: if that field has since rejoined the line under the same
    -- field (a join whose reply was lost, after a plain or older client took the lock without
    -- clearing the pointer), its entry is a first lease again, and it stays (review).
    local value = tonumber(redis.call('hget', q.handoff, last) or false)
    if value and value >= 1000000000000000 then
      redis.call('hdel', q.handoff, last)
    end
    redis.call('hdel', q.handoff, 'relock:last-grant')
  end
end

-- `free`: the caller has just seen that the lock does not exist (one EXISTS fewer); `first` and
-- `alive`, when given: the first waiter and its deadline as the caller's head(q) just returned
-- them (no second read).
local function pass_on(lock, counter, counter_ttl, channel, q, publish, now, tell, free, first, alive)
  if not free and redis.call('exists', lock) == 1 then
    return false
  end
  if first == nil then
    first, alive = head(q)
  end
  if not first then
    return false
  end
  local first_lease = tonumber(redis.call('hget', q.handoff, first) or false)
  if first_lease and first_lease > 0 and first_lease < 1000000000000000 then
    local deadline = tonumber(alive)
    -- head() returned a waiter that evict() left, so its deadline is after `now`.
    local lease = math.min(first_lease, deadline - now)
    -- Minted first: a counter of another type fails before anything is written.
    local token = mint(counter, counter_ttl)
    local t = string.format('%.0f', token)
    -- Its handoff entry (the first lease) is cleared before the token is written, not
    -- written over: a hash left with only this grant then lives the grant's lease (below),
    -- not the line's (review: written over, it outlived a holder that died by the line's time).
    dequeue(q, first)
    redis.call('hset', lock, first, 1)
    redis.call('pexpire', lock, lease)
    forget_last_grant(q)
    redis.call('hset', q.handoff, first, t, 'relock:last-grant', first)
    if redis.call('pttl', q.handoff) < lease then
      redis.call('pexpire', q.handoff, lease)
    end
    redis.call(publish, channel, first .. '=' .. t)
  elseif tell then
    redis.call(publish, channel, first)
  end
  return first
end
