-- quorum_renew: a quorum lock's renewal on one node.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing counter
-- ARGV[1]  lease in ms
-- ARGV[2]  grace in ms that the fencing counter outlives the lock
-- ARGV[3]  owner field
-- ARGV[4]  the hold's fencing token
--
-- Returns 1 (renewed), 2 (the node had lost the lock, e.g. it restarted empty, and the lock was
-- free there: put back, with the counter raised to the token) or 0 (another owner holds it
-- here).
local lease = tonumber(ARGV[1])
local counter_ttl = lease + tonumber(ARGV[2])
if redis.call('hexists', KEYS[1], ARGV[3]) == 1 then
  redis.call('pexpire', KEYS[1], lease)
  fence(KEYS[2], tonumber(ARGV[4]), counter_ttl)
  return 1
end
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[3], 1)
  redis.call('pexpire', KEYS[1], lease)
  fence(KEYS[2], tonumber(ARGV[4]), counter_ttl)
  return 2
end
return 0
