-- fair_heartbeat: one client's heartbeat for its waiters, one call for up to a batch of them.
--
-- KEYS     groups of five per waiter i: KEYS[5i-4] the lock hash, KEYS[5i-3] the release
--          channel, KEYS[5i-2] the queue, KEYS[5i-1] the heartbeats, KEYS[5i] the sequence
-- ARGV[1]  heartbeat deadline in ms
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2+i] owner field of waiter i
--
-- Evicts dead waiters first (and tells the new first waiter if the lock is free). Returns an
-- array with, for each waiter i: 2 (still in line, and first while the lock is free: it should
-- try now; its wake-up may have been lost), 1 (still in line; deadline pushed back) or 0 (not
-- in line any more: evicted, so it should rejoin with its ticket).
local heartbeat = tonumber(ARGV[1])
local result = {}
for i = 1, (#KEYS) / 5 do
  local lock, channel, queue, alive, seq = KEYS[5*i-4], KEYS[5*i-3], KEYS[5*i-2], KEYS[5*i-1], KEYS[5*i]
  local field = ARGV[2 + i]
  local now = now_ms()
  local evicted = evict(queue, alive, seq, now)
  if redis.call('zscore', queue, field) then
    redis.call('zadd', alive, now + heartbeat, field)
    keep(heartbeat + 1000, queue, alive, seq)
    result[i] = 1
  else
    result[i] = 0
  end
  if redis.call('exists', lock) == 0 then
    local first = head(queue, alive, seq)
    if first == field then
      result[i] = 2
    elseif first and evicted > 0 then
      redis.call(ARGV[2], channel, first)
    end
  end
end
return result
