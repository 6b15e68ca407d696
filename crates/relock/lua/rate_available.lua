-- rate_available: the permits that could be taken now (Redisson's availablePermits), read
-- only: records taken more than `interval` ago count as given back, and a value above the
-- rate (the rate was lowered) as the rate less the records' permits; a per-client value is
-- always the rate less its live records (the next acquire writes both).
--
-- KEYS[1]  the config hash `name`; KEYS[2..5] the value and records keys (lib/rate.lua)
-- ARGV[1]  unused (Redisson sends its client's clock here; relock reads the server's)
--
-- Returns
--   {1, permits}  the permits available
--   {-1, 0}       the limiter has no rate
--   {-3, i}       KEYS[i] holds something the limiter never keeps there
local foreign = rate_foreign_key(KEYS)
if foreign then
  return {-3, foreign}
end
local rate, interval, kind = rate_config(KEYS[1])
if rate == nil then
  return {-1, 0}
end
local value_key, permits_key = rate_state(KEYS, kind)
local horizon = rate_ms(rate_now() - interval)
if kind == '1' then
  -- A client's own value is what the next acquire derives: the rate less its live records.
  local live = rate_sum(redis.call('zrangebyscore', permits_key, '(' .. horizon, '+inf'))
  return {1, math.max(0, rate - live)}
end
local value = redis.call('get', value_key)
if value == false then
  return {1, rate}
end
value = tonumber(value)
local released = rate_sum(redis.call('zrangebyscore', permits_key, 0, horizon))
value = value + released
if value > rate then
  -- The rate was lowered since the value was written: what the next acquire computes.
  local all = rate_sum(redis.call('zrange', permits_key, 0, -1))
  value = rate - (all - released)
end
if value < 0 then
  value = 0
end
return {1, value}
