-- fair_heartbeat: one client's heartbeat for its waiters, one call for up to a batch of them.
--
-- KEYS     groups of seven per waiter i: KEYS[7i-6] the lock hash, KEYS[7i-5] the release
--          channel, KEYS[7i-4] the queue, KEYS[7i-3] the heartbeats, KEYS[7i-2] the sequence,
--          KEYS[7i-1] the fencing counter, KEYS[7i] the handoff hash
-- ARGV[1]  heartbeat deadline in ms
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  ms the fencing counter lives once seeded (the grace)
-- ARGV[3+i] owner field of waiter i
--
-- Evicts dead waiters first (and hands the lock to, or tells, the new first waiter if the lock
-- is free). Returns an array with, for each waiter i: 2 (still in line, and first while the
-- lock is free: it should try now; its wake-up may have been lost), 1 (still in line; deadline
-- pushed back) or 0 (not in line any more: evicted, or handed the lock; it should try now,
-- which reports the grant or rejoins).
local heartbeat = tonumber(ARGV[1])
local grace = tonumber(ARGV[3])
local result = {}
for i = 1, (#KEYS) / 7 do
  local lock, channel, counter = KEYS[7*i-6], KEYS[7*i-5], KEYS[7*i-1]
  local q = line(KEYS[7*i-4], KEYS[7*i-3], KEYS[7*i-2], KEYS[7*i])
  local field = ARGV[3 + i]
  local now = now_ms()
  local evicted = evict(q, now)
  if redis.call('zscore', q.queue, field) then
    redis.call('zadd', q.alive, now + heartbeat, field)
    keep(heartbeat + 1000, q)
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
