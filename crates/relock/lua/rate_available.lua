-- rate_available: the permits that could be taken now (Redisson's availablePermits), read
-- only: what the next acquire would find (lib/rate.lua's rate_current): records taken more
-- than `interval` ago count as given back, and a value written under another rate counts as
-- the rate less the live records' permits.
--
-- KEYS[1]  the config hash `name`; KEYS[2..6] the state keys (lib/rate.lua)
-- ARGV[1]  unused (Redisson sends its client's clock here; relock reads the server's)
--
-- Returns
--   {1, permits}  the permits available
--   {-1, 0}       the limiter has no rate
--   {-3, i}       KEYS[i] holds something the limiter never keeps there
local foreign, fields, types = rate_foreign_key(KEYS, true)
if foreign then
  return {-3, foreign}
end
local rate, interval, kind = rate_config(fields)
if rate == nil then
  return {-1, 0}
end
local value_key, permits_key, rate_key = rate_state(KEYS, kind)
local value = rate_current(value_key, permits_key, rate_key, rate, rate_now(), interval, types, false)
if value == nil then
  return {-3, rate_records_index(kind)}
end
return {1, math.max(0, value)}
