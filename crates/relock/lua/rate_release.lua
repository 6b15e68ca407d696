-- rate_release: give n permits back before their records expire (Redisson's release): the
-- oldest records lose n permits between them, and the value gains n, at most up to the rate.
--
-- KEYS[1]  the config hash `name`; KEYS[2..5] the value and records keys (lib/rate.lua)
-- KEYS[6]  this call's request key, relock_request:{name}:<id>: a copy of the call that
--          arrives again (a pool that resends after a reconnect, a retry after a lost reply)
--          gives nothing back
-- ARGV[1]  n, the permits to give back (at least 1)
-- ARGV[2]  ms the request key lives
--
-- Returns
--   {1, 0}   given back (or a copy of this call already did)
--   {-1, 0}  the limiter has no rate
--   {-3, i}  KEYS[i] holds something the limiter never keeps there
if redis.call('exists', KEYS[6]) == 1 then
  return {1, 0}
end
local foreign = rate_foreign_key(KEYS)
if foreign then
  return {-3, foreign}
end
local rate, interval, kind = rate_config(KEYS[1])
if rate == nil then
  return {-1, 0}
end
local value_key, permits_key = rate_state(KEYS, kind)
local to_release = tonumber(ARGV[1])
local records = redis.call('zrange', permits_key, 0, -1, 'withscores')
for i = 1, #records - 1, 2 do
  if to_release <= 0 then
    break
  end
  local v, score = records[i], records[i + 1]
  local id, permits = struct.unpack('Bc0I', v)
  redis.call('zrem', permits_key, v)
  if permits <= to_release then
    to_release = to_release - permits
  else
    redis.call('zadd', permits_key, score, struct.pack('Bc0I', string.len(id), id, permits - to_release))
    to_release = 0
  end
end
local value = redis.call('get', value_key)
if value == false then
  value = rate
else
  value = tonumber(value)
end
value = value + tonumber(ARGV[1])
if value > rate then
  value = rate
end
redis.call('set', value_key, value)
redis.call('set', KEYS[6], 1, 'px', ARGV[2])
rate_keep_alive(KEYS[1], value_key, permits_key, interval)
return {1, 0}
