-- renew: the watchdog's batch renewal, one call for up to a batch of holds.
--
-- KEYS[i]          the lock hash of hold i (KEYS[1] is the first hold's)
-- ARGV[1]          lease in ms
-- ARGV[1+i]        the field of hold i
--
-- Returns an array with, for each hold i, 1 (its lease is now at least ARGV[1]) or 0 (the hold
-- is gone: expired, deleted, force-unlocked, released, or the key is not a lock).
-- A renewal never re-creates a hold and never shortens a lease (a longer fixed-lease re-entry
-- keeps its own). The fencing counter is left alone: it need not outlive the hold (see
-- `mint` in lib/mint.lua).
local lease = tonumber(ARGV[1])
local result = {}
for i = 1, #KEYS do
  local lock = KEYS[i]
  local held = redis.pcall('hexists', lock, ARGV[1 + i])
  if held == 1 then
    extend(lock, lease)
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
