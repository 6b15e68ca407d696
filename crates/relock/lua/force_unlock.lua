-- force_unlock: delete the lock whoever holds it, and wake a waiter.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the release channel
-- KEYS[3..7] (fair lock only) the queue, the heartbeats, the sequence, the fencing counter
--          (unused here) and the handoff hash
-- ARGV[1]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[2]  (optional) the message for a non-fair lock's waiters: "0" (the default: wakes one
--          per client) or "1" (a read-write lock: wakes every waiter)
-- The fencing counter is not touched: it expires by itself (lib/mint.lua).
--
-- Returns 1 if a lock was deleted, 0 if there was none. A plain lock's waiters get "0"; a fair
-- lock's first waiter gets its owner field.
if redis.call('type', KEYS[1]).ok ~= 'hash' then
  return 0
end
if #KEYS >= 7 then
  -- The token records of the holds it ends, if a handoff gave them the lock.
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    forget_grant(KEYS[7], field)
  end
end
redis.call('del', KEYS[1])
if #KEYS >= 5 then
  local q = line(KEYS[3], KEYS[4], KEYS[5], KEYS[7])
  evict(q, now_ms())
  -- The first waiter is told, not handed the lock (it takes it with its own acquire).
  -- Nobody in line: wake plain waiters of the same name (Redisson's RLock, relock's plain
  -- lock) with Redisson's unlock message.
  if not wake_head(KEYS[1], KEYS[2], q, ARGV[1]) then
    redis.call(ARGV[1], KEYS[2], 0)
  end
else
  redis.call(ARGV[1], KEYS[2], ARGV[2] or 0)
end
return 1
