-- The fair lock's direct handoff (after lib/mint.lua and lib/queue.lua): a leave, a heartbeat or
-- an acquire that finds the lock free grants it to the first live waiter itself, instead of
-- telling it to come and take it. A release grants it with the same `grant`, from
-- fair_release.lua, which reads the first waiter once itself.
--
-- If the first waiter asked for it (it has a first lease in the line), it is granted as its
-- own acquire would grant it: its token minted, its hold (count 1) written, out of the line.
-- Its lease is that first lease, cut at its heartbeat deadline: a waiter that died in line
-- then holds the lock no longer than it would have held up the line (docs/safety.md). The
-- grant record (`<field>=<token>`, living that lease) lets its next acquire report this grant
-- if the message is lost; the message, published as "<field>=<token>", tells it that it holds
-- the lock. A first waiter that did not ask (a longer fixed lease, `sync_replicas`) is told
-- "<field>" when `tell` is true. Nothing happens while the lock is held.
-- Returns the first waiter, or false.

-- Grants the free lock to `first`: its token, out of the line, its hold for `lease` ms, the
-- grant record (which replaces the record of the waiter handed the lock before: that hold has
-- ended) and the message. Returns the token.
local function grant(lock, counter, counter_ttl, channel, q, publish, first, lease)
  -- Minted first: a counter of another type fails before anything is written.
  local token = mint(counter, counter_ttl)
  local t = string.format('%.0f', token)
  dequeue(q, first)
  redis.call('hset', lock, first, 1)
  redis.call('pexpire', lock, lease)
  redis.call('set', q.grant, first .. '=' .. t, 'px', lease)
  redis.call(publish, channel, first .. '=' .. t)
  return token
end

-- `free`: the caller has just seen that the lock does not exist (one EXISTS fewer); `first`,
-- `alive` and `first_lease`, when given: the first waiter, its deadline and its first lease as
-- the caller's head(q) just returned them (no second read).
local function pass_on(lock, counter, counter_ttl, channel, q, publish, now, tell, free, first,
    alive, first_lease)
  if not free and redis.call('exists', lock) == 1 then
    return false
  end
  if first == nil then
    first, alive, first_lease = head(q)
  end
  if not first then
    return false
  end
  first_lease = tonumber(first_lease or false)
  if first_lease and first_lease > 0 then
    -- head() returned a waiter that evict() left, so its deadline is after `now`.
    grant(lock, counter, counter_ttl, channel, q, publish, first,
      math.min(first_lease, tonumber(alive) - now))
  elseif tell then
    redis.call(publish, channel, first)
  end
  return first
end
