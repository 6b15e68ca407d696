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
return each(#KEYS, function(i)
  if redis.pcall('hexists', KEYS[i], ARGV[1 + i]) == 1 then
    extend(KEYS[i], lease)
    return 1
  end
  return 0
end)
