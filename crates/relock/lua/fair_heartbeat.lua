-- fair_heartbeat: one client's heartbeat for its waiters, one call for up to a batch of them.
--
-- KEYS     groups of four per waiter i: KEYS[4i-3] the lock hash, KEYS[4i-2] the line,
--          KEYS[4i-1] the fencing counter, KEYS[4i] the grant record (lib/queue.lua)
-- ARGV[1]  heartbeat deadline in ms
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  ms the fencing counter lives once seeded (the grace)
-- ARGV[2+2i] owner field of waiter i, ARGV[3+2i] its lock's fair channel (an argument,
--          not a key: an ACL user needs a channel grant for it, `&`, not a key grant, `~`)
--
-- Evicts dead waiters first (and hands the lock to, or tells, the new first waiter if the lock
-- is free). Returns an array with, for each waiter i: 2 (still in line, and first while the
-- lock is free: it should try now; its wake-up may have been lost), 1 (still in line; deadline
-- pushed back) or 0 (not in line any more: evicted, or handed the lock; it should try now,
-- which reports the grant or rejoins).
local heartbeat = tonumber(ARGV[1])
local grace = tonumber(ARGV[3])
local result = {}
for i = 1, (#KEYS) / 4 do
  local lock, channel, counter = KEYS[4*i-3], ARGV[3 + 2*i], KEYS[4*i-1]
  local q = line(KEYS[4*i-2], KEYS[4*i])
  local field = ARGV[2 + 2*i]
  local now = now_ms()
  local evicted = evict(q, now)
  if redis.call('zscore', q.key, field) then
    redis.call('zadd', q.key, string.format('%.0f', now + heartbeat), 'alive:' .. field)
    keep(heartbeat + 1000, q, false)
    result[i] = 1
  else
    result[i] = 0
  end
  if redis.call('exists', lock) == 0 then
    local first = head(q)
    if first == field then
      result[i] = 2
    elseif first then
      pass_on(lock, counter, grace, channel, q, ARGV[2], now, evicted > 0)
    end
  end
end
return result
