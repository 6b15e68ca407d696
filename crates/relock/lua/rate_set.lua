-- rate_set: set the limiter's rate whatever it had (Redisson's setRate): the config is
-- overwritten, and the state of the new type (its value and records) deleted, so the limit
-- starts afresh. Without a keep-alive the config loses any TTL an earlier one gave it (the
-- new state then lives as long as the config).
--
-- KEYS[1]  the config hash `name`; KEYS[2..6] the state keys (lib/rate.lua)
-- ARGV[1]  the rate: permits per interval
-- ARGV[2]  the interval in ms
-- ARGV[3]  the type: 0 overall, 1 per client
-- ARGV[4]  the keep-alive in ms (0: none)
--
-- Returns
--   {1}      set
--   {-3, i}  KEYS[i] holds something the limiter never keeps there: nothing written
local foreign = rate_foreign_key(KEYS)
if foreign then
  return {-3, foreign}
end
local value, permits, written = rate_state(KEYS, ARGV[3])
if tonumber(ARGV[4]) == 0 then
  -- No keep-alive: the keys live until deleted, whatever TTL an earlier one left. The config
  -- is written anew (it holds these four fields only) rather than PERSISTed: PERSIST is not
  -- in the documented ACL line.
  redis.call('del', KEYS[1])
end
redis.call('hset', KEYS[1], 'rate', ARGV[1])
redis.call('hset', KEYS[1], 'interval', ARGV[2])
redis.call('hset', KEYS[1], 'type', ARGV[3])
redis.call('hset', KEYS[1], 'keepAliveTime', ARGV[4])
if tonumber(ARGV[4]) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[4])
end
redis.call('del', value, permits, written or value)
return {1}
