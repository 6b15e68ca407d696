-- rate_acquire: take n permits if the limit allows (Redisson's tryAcquire), on the server's
-- clock: records taken more than `interval` ago are expired and their permits counted back;
-- a grant is one record scored now.
--
-- KEYS[1]  the config hash `name`; KEYS[2..5] the value and records keys (lib/rate.lua)
-- ARGV[1]  n, the permits to take (at least 1)
-- ARGV[2]  the record's random id, 16 bytes as 32 hex digits
--
-- Returns
--   {1, now}     taken; `now` is the server's time of the grant in ms (the record's score)
--   {0, delay}   not enough permits left: the oldest record expires in `delay` ms (Redisson's
--                3 + interval - its age)
--   {-1, 0}      the limiter has no rate (Redisson: "RateLimiter is not initialized")
--   {-2, rate}   n is above the rate (Redisson: "Requested permits amount cannot exceed
--                defined rate")
--   {-3, i}      KEYS[i] holds something the limiter never keeps there
-- Nothing is written but on a grant, on expiring records, on a value that changed (records
-- expired; a shared value above a lowered rate becomes the rate less the records' permits; a
-- per-client value is always that), and the expiries (lib/rate.lua's keep-alive; a refusal's
-- keys live at least `delay` + 1000 ms).
local foreign = rate_foreign_key(KEYS)
if foreign then
  return {-3, foreign}
end
local rate, interval, kind = rate_config(KEYS[1])
if rate == nil then
  return {-1, 0}
end
local n = tonumber(ARGV[1])
if n > rate then
  return {-2, rate}
end
local value_key, permits_key = rate_state(KEYS, kind)
local now = rate_now()
local id = string.gsub(ARGV[2], '%x%x', function(pair)
  return string.char(tonumber(pair, 16))
end)
local record = struct.pack('Bc0I', string.len(id), id, n)

local result
local stored = redis.call('get', value_key)
local value
local horizon = rate_ms(now - interval)
if kind == '1' then
  -- A client's own value is derived from its records on every call: another client's set
  -- (which starts only its own state afresh) changes the rate they count against, lowered or
  -- raised.
  redis.call('zremrangebyscore', permits_key, 0, horizon)
  value = rate_clamp(rate, permits_key)
elseif stored == false then
  value = rate
else
  value = tonumber(stored)
  local released = rate_sum(redis.call('zrangebyscore', permits_key, 0, horizon))
  if released > 0 then
    redis.call('zremrangebyscore', permits_key, 0, horizon)
    value = value + released
  end
  if value > rate then
    value = rate_clamp(rate, permits_key)
  end
end
if value < n then
  local first = redis.call('zrange', permits_key, 0, 0, 'withscores')
  if first[2] == nil then
    -- No record is left to wait for (they expired with a keep-alive the value outlived, or
    -- were released): none of the rate is in use. (Redisson's script fails here.)
    value = rate
  else
    result = {0, 3 + interval - (now - tonumber(first[2]))}
  end
end
if result == nil then
  redis.call('zadd', permits_key, rate_ms(now), record)
  value = value - n
  result = {1, now}
end
if stored == false or tonumber(stored) ~= value then
  redis.call('set', value_key, value)
end
-- A refused caller sleeps `delay` and asks again: the keys outlive that sleep.
local least = nil
if result[1] == 0 then
  least = result[2] + 1000
end
rate_keep_alive(KEYS[1], value_key, permits_key, interval, least)
return result
