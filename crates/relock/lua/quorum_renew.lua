-- quorum_renew: a quorum lock's renewal on one node, for up to a batch of holds.
--
-- KEYS     pairs: KEYS[2i-1] the lock hash of hold i, KEYS[2i] its fencing counter
-- ARGV[1]  lease in ms
-- ARGV[2]  ms the fencing counter lives at least after it is raised (the grace)
-- ARGV[1+2i] the field of hold i; ARGV[2+2i] its fencing token
--
-- Returns an array with, for each hold i: 1 (renewed: the hold is here and its lease is now at
-- least ARGV[1], never shortened), 2 (the hold is not here and the lock is free here: a
-- candidate for `quorum_putback.lua`, which the client sends only when a majority of nodes
-- renewed) or 0 (another hold has the lock here, or the key is not a lock).
-- Nothing is created: only a real renewal counts towards the hold's majority.
local lease = tonumber(ARGV[1])
local counter_ttl = tonumber(ARGV[2])
return each(#KEYS / 2, function(i)
  local lock, counter = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.pcall('hexists', lock, ARGV[1 + 2 * i]) == 1 then
    extend(lock, lease)
    fence(counter, tonumber(ARGV[2 + 2 * i]), counter_ttl)
    return 1
  elseif redis.call('exists', lock) == 0 then
    return 2
  end
  return 0
end)
