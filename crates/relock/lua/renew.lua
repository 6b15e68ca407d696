-- renew: the watchdog's batch renewal, one call for up to a batch of locks.
--
-- KEYS     pairs: KEYS[2i-1] the lock hash of lock i, KEYS[2i] its fencing counter
-- ARGV[1]  lease in ms
-- ARGV[2]  grace in ms that the fencing counter outlives the lock
-- ARGV[2+i] owner field of lock i
--
-- Returns an array with, for each lock i, 1 (renewed) or 0 (this owner no longer holds it:
-- expired, deleted, force-unlocked, or the key is not a lock). A lock is never re-created.
local lease = tonumber(ARGV[1])
local counter_ttl = lease + tonumber(ARGV[2])
local result = {}
for i = 1, #KEYS / 2 do
  local lock = KEYS[2 * i - 1]
  local held = redis.pcall('hexists', lock, ARGV[2 + i])
  if held == 1 then
    redis.call('pexpire', lock, lease)
    redis.call('pexpire', KEYS[2 * i], counter_ttl)
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
