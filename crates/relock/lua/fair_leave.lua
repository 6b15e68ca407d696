-- fair_leave: a waiter gives up (timed out, cancelled, failed) and leaves the queue.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the release channel
-- KEYS[3]  the queue
-- KEYS[4]  the heartbeats
-- KEYS[5]  the sequence
-- ARGV[1]  owner field
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
--
-- Returns 1 if the waiter was in the queue, 0 if not. If it was first and the lock is free,
-- the next waiter is told, so the queue never stalls behind someone who left.
local evicted = evict(KEYS[3], KEYS[4], KEYS[5], now_ms())
local was_first = head(KEYS[3], KEYS[4], KEYS[5]) == ARGV[1]
local removed = dequeue(KEYS[3], KEYS[4], KEYS[5], ARGV[1])
if was_first or evicted > 0 then
  wake_head(KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[2])
end
return removed
