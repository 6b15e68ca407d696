-- quorum_renew: a quorum lock's renewal on one node, for up to a batch of locks.
--
-- KEYS     pairs: KEYS[2i-1] the lock hash of lock i, KEYS[2i] its fencing counter
-- ARGV[1]  lease in ms
-- ARGV[2]  grace in ms that the fencing counter outlives the lock
-- ARGV[1+2i] owner field of lock i; ARGV[2+2i] its hold's fencing token
--
-- Returns an array with, for each lock i: 1 (renewed), 2 (the node had lost the lock, e.g. it
-- restarted empty, and the lock was free there: put back, with the counter raised to the token)
-- or 0 (another owner holds it here).
local lease = tonumber(ARGV[1])
local counter_ttl = lease + tonumber(ARGV[2])
local result = {}
for i = 1, #KEYS / 2 do
  local lock, counter = KEYS[2 * i - 1], KEYS[2 * i]
  local field, token = ARGV[1 + 2 * i], tonumber(ARGV[2 + 2 * i])
  if redis.call('hexists', lock, field) == 1 then
    redis.call('pexpire', lock, lease)
    fence(counter, token, counter_ttl)
    result[i] = 1
  elseif redis.call('exists', lock) == 0 then
    redis.call('hset', lock, field, 1)
    redis.call('pexpire', lock, lease)
    fence(counter, token, counter_ttl)
    result[i] = 2
  else
    result[i] = 0
  end
end
return result
