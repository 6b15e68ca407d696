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

-- The fencing counter. While it exists, a token is the next integer; when it does not (never
-- used, expired a grace period after the last release, or lost in an empty restart or a
-- failover), it starts again from the server clock in µs, which has moved past every token the
-- lost counter handed out (see docs/safety.md for the argument and its assumptions).
local function mint()
  local token = redis.call('incr', KEYS[2])
  if token == 1 then
    local t = redis.call('time')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('set', KEYS[2], string.format('%.0f', token), 'px', counter_ttl)
  else
    redis.call('pexpire', KEYS[2], counter_ttl)
  end
  return token
end

if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, mint()}
end

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  -- A nested hold never shortens the lease of the holds around it.
  if redis.call('pttl', KEYS[1]) < lease then
    redis.call('pexpire', KEYS[1], lease)
  end
  local token = tonumber(redis.call('get', KEYS[2]) or '')
  if token == nil then
    token = mint()
  elseif redis.call('pttl', KEYS[2]) < counter_ttl then
    redis.call('pexpire', KEYS[2], counter_ttl)
  end
  return {2, token, count}
end

return {0, redis.call('pttl', KEYS[1])}
