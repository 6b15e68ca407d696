-- quorum_putback: puts a quorum hold back on one node of a minority that lost it (it restarted
-- empty, or the key was deleted there), for up to a batch of holds. The client sends it only
-- for holds that a majority of nodes just renewed, so it repairs a minority and can never bring
-- back a hold that a majority lost.
--
-- KEYS     pairs: KEYS[2i-1] the lock hash of hold i, KEYS[2i] its fencing counter
-- ARGV[1]  lease in ms
-- ARGV[2]  ms the fencing counter lives at least after it is raised (the grace)
-- ARGV[1+2i] the field of hold i; ARGV[2+2i] its fencing token
--
-- Returns an array with, for each hold i: 1 (put back, with the counter raised to the token)
-- or 0 (the lock is not free here any more: left alone).
local lease = tonumber(ARGV[1])
local counter_ttl = tonumber(ARGV[2])
return each(#KEYS / 2, function(i)
  local lock, counter = KEYS[2 * i - 1], KEYS[2 * i]
  if redis.call('exists', lock) ~= 0 then
    return 0
  end
  redis.call('hset', lock, ARGV[1 + 2 * i], 1)
  redis.call('pexpire', lock, lease)
  fence(counter, tonumber(ARGV[2 + 2 * i]), counter_ttl)
  return 1
end)
