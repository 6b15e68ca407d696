-- acquire: take the lock, or re-enter it, or report how long the holder still has.
--
-- KEYS[1]  the lock hash (the lock's name); field <client_id>:<owner> -> hold count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- ARGV[1]  lease in ms (PEXPIRE of the lock)
-- ARGV[2]  owner field, <client_id>:<owner>
-- ARGV[3]  grace in ms that the fencing counter outlives the lock
--
-- Returns
--   {1, token}         acquired afresh; token = counter + 1, or server TIME in µs if no counter
--   {2, token, count}  re-entered; token is the holder's token; count the new hold count
--   {0, pttl}          held by another owner; pttl is its remaining lease (-1: no expiry)
-- A key of another type fails with WRONGTYPE and is left untouched.
local lease = tonumber(ARGV[1])
local counter_ttl = lease + tonumber(ARGV[3])

if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, mint(KEYS[2], counter_ttl)}
end

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  return reenter(KEYS[1], KEYS[2], ARGV[2], lease, counter_ttl)
end

return {0, redis.call('pttl', KEYS[1])}
