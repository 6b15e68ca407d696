-- rate_acquire: take n permits if the limit allows (Redisson's tryAcquire), on the server's
-- clock: records taken more than `interval` ago are expired and their permits counted back;
-- a grant is one record scored now.
--
-- KEYS[1]  the config hash `name`; KEYS[2..6] the state keys (lib/rate.lua)
-- ARGV[1]  n, the permits to take (at least 1)
-- ARGV[2]  the record's random id, 16 bytes as 32 hex digits
--
-- Returns
--   {1, now}     taken; `now` is the server's time of the grant in ms (the record's score).
--                A copy of this call that finds its record still there (a pool that resends
--                after a reconnect) takes nothing more and answers the record's time (once the
--                record has expired, or a release took permits off it, a copy takes again:
--                fewer grants, never more).
--   {0, delay}   not enough permits left: the oldest record expires in `delay` ms (Redisson's
--                3 + interval - its age)
--   {-1, 0}      the limiter has no rate (Redisson: "RateLimiter is not initialized")
--   {-2, rate}   n is above the rate (Redisson: "Requested permits amount cannot exceed
--                defined rate")
--   {-3, i}      KEYS[i] holds something the limiter never keeps there
-- Nothing is written but on a grant, on expiring records, on a value that changed (records
-- expired, or it was recomputed: lib/rate.lua's rate_current), a stale rate key, and the
-- expiries (lib/rate.lua's keep-alive; a refusal's keys live at least `delay` + 1000 ms).
local foreign, fields, types = rate_foreign_key(KEYS, true)
if foreign then
  return {-3, foreign}
end
local rate, interval, kind, keep = rate_config(fields)
if rate == nil then
  return {-1, 0}
end
local n = tonumber(ARGV[1])
if n > rate then
  return {-2, rate}
end
local value_key, permits_key, rate_key = rate_state(KEYS, kind)
local id = string.gsub(ARGV[2], '%x%x', function(pair)
  return string.char(tonumber(pair, 16))
end)
local record = struct.pack('Bc0I', string.len(id), id, n)
local done = redis.call('zscore', permits_key, record)
if done then
  return {1, tonumber(done)}
end
local now = rate_now()
local value, stored, stale =
  rate_current(value_key, permits_key, rate_key, rate, now, interval, types, true)
if value == nil then
  return {-3, rate_records_index(kind)}
end

local result = nil
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
rate_store(value_key, rate_key, value, stored, rate, stale)
-- A refused caller sleeps `delay` and asks again: the keys outlive that sleep.
local least = nil
if result[1] == 0 then
  least = result[2] + 1000
end
rate_keep_alive(KEYS[1], {value_key, permits_key, rate_key}, keep, interval, least)
return result
