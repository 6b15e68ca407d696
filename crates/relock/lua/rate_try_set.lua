-- rate_try_set: set the limiter's rate only if it has none (Redisson's trySetRate): each of
-- Redisson's four fields is set where missing, and the config given the keep-alive as its
-- time to live when this call set the type.
--
-- KEYS[1]  the config hash `name` (lib/rate.lua)
-- ARGV[1]  the rate: permits per interval
-- ARGV[2]  the interval in ms
-- ARGV[3]  the type: 0 overall, 1 per client
-- ARGV[4]  the keep-alive in ms (0: none)
--
-- Returns
--   {1}      set
--   {0}      the limiter had a rate already: left as it was
--   {-3, 1}  the key holds something the limiter never keeps there: nothing written
if rate_foreign_key({KEYS[1]}) then
  return {-3, 1}
end
-- HSETNX, one field at a time, as Redisson's script.
local function set_if_absent(field, value)
  if redis.call('hexists', KEYS[1], field) == 1 then
    return 0
  end
  redis.call('hset', KEYS[1], field, value)
  return 1
end
set_if_absent('rate', ARGV[1])
set_if_absent('interval', ARGV[2])
set_if_absent('keepAliveTime', ARGV[4])
local set = set_if_absent('type', ARGV[3])
if set == 1 and tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
return {set}
