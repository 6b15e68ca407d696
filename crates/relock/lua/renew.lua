-- renew: the watchdog's batch renewal, one call for up to a batch of holds.
--
-- KEYS     pairs: KEYS[2i-1] the lock hash of hold i, KEYS[2i] its fencing counter
-- ARGV[1]  lease in ms
-- ARGV[2]  grace in ms that the fencing counter outlives the lock
-- ARGV[2+i] the field of hold i
--
-- Returns an array with, for each hold i, 1 (its lease is now at least ARGV[1]) or 0 (the hold
-- is gone: expired, deleted, force-unlocked, released, or the key is not a lock).
-- A renewal never re-creates a hold and never shortens a lease (a longer fixed-lease re-entry
-- keeps its own).
local lease = tonumber(ARGV[1])
local counter_ttl = lease + tonumber(ARGV[2])
local result = {}
for i = 1, #KEYS / 2 do
  local lock = KEYS[2 * i - 1]
  local held = redis.pcall('hexists', lock, ARGV[2 + i])
  if held == 1 then
    extend(lock, lease)
    extend(KEYS[2 * i], counter_ttl)
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
