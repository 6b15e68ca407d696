-- rate_config: the limiter's config (Redisson's getConfig), read only.
--
-- KEYS[1]  the config hash `name` (lib/rate.lua)
-- ARGV[1]  unused
--
-- Returns
--   {1, rate, interval, type, keepAliveTime}  the config (keepAliveTime 0: none)
--   {-1}      the limiter has no rate
--   {-3, 1}   the key holds something the limiter never keeps there
local foreign, fields = rate_foreign_key({KEYS[1]})
if foreign then
  return {-3, 1}
end
local rate, interval, kind, keep = rate_config(fields)
if rate == nil then
  return {-1}
end
return {1, rate, interval, tonumber(kind), keep}
