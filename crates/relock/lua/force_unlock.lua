-- force_unlock: delete the lock whoever holds it, and wake a waiter.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the release channel
-- KEYS[3]  the fencing counter
-- ARGV[1]  grace in ms that the fencing counter outlives the lock
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
--
-- Returns 1 if a lock was deleted, 0 if there was none.
if redis.call('type', KEYS[1]).ok ~= 'hash' then
  return 0
end
redis.call('del', KEYS[1])
redis.call('pexpire', KEYS[3], ARGV[1])
redis.call(ARGV[2], KEYS[2], 0)
return 1
