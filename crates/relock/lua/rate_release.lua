-- rate_release: give n permits back before their records expire (Redisson's release): records
-- whose interval ended are expired first (as an acquire does), then the oldest live records
-- lose n permits between them, and the value gains n, at most up to the rate.
--
-- KEYS[1]  the config hash `name`; KEYS[2..6] the state keys (lib/rate.lua)
-- KEYS[7]  this call's request key, relock_request:{name}:<id>: a copy of the call that
--          arrives again (a pool that resends after a reconnect, a retry after a lost reply)
--          gives nothing back
-- ARGV[1]  n, the permits to give back (at least 1)
-- ARGV[2]  ms the request key lives
--
-- Returns
--   {1, 0}   given back (or a copy of this call already did)
--   {-1, 0}  the limiter has no rate
--   {-3, i}  KEYS[i] holds something the limiter never keeps there
if redis.call('exists', KEYS[7]) == 1 then
  return {1, 0}
end
local foreign, fields, types = rate_foreign_key(KEYS, true)
if foreign then
  return {-3, foreign}
end
local rate, interval, kind, keep = rate_config(fields)
if rate == nil then
  return {-1, 0}
end
local value_key, permits_key, rate_key = rate_state(KEYS, kind)
-- Every member the loop below may take permits off is a record, before anything is written.
if rate_sum(redis.call('zrange', permits_key, 0, -1)) == nil then
  return {-3, rate_records_index(kind)}
end
-- Expired records first: their permits are back already, and n comes off the live ones.
local value, stored, stale =
  rate_current(value_key, permits_key, rate_key, rate, rate_now(), interval, types, true)
if value == nil then
  return {-3, rate_records_index(kind)}
end
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
value = math.min(rate, value + tonumber(ARGV[1]))
rate_store(value_key, rate_key, value, stored, rate, stale)
redis.call('set', KEYS[7], 1, 'px', ARGV[2])
rate_keep_alive(KEYS[1], {value_key, permits_key, rate_key}, keep, interval)
return {1, 0}
