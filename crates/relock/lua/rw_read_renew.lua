-- rw_read_renew: the watchdog's batch renewal of read holds.
--
-- KEYS     pairs: KEYS[2i-1] the lock hash of hold i, KEYS[2i] its timeout key
-- ARGV[1]  lease in ms
-- ARGV[1+i] the field of hold i
--
-- Returns an array with, for each hold i, 1 (the hold and its timeout key now live at least
-- ARGV[1]) or 0 (the hold is gone, or its timeout key expired: another reader's release may
-- already have treated it as dead; nothing is re-created).
local lease = tonumber(ARGV[1])
return each(#KEYS / 2, function(i)
  local lock, timeout = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.pcall('hexists', lock, ARGV[1 + i]) ~= 1 or redis.call('pttl', timeout) <= 0 then
    return 0
  end
  extend(lock, lease)
  extend(timeout, lease)
  return 1
end)
