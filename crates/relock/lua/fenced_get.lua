-- fenced_get: a fenced key's value and the token it was written under.
--
-- KEYS[1]  the fenced key: a hash of `value` and `fence`
-- ARGV[1]  none
--
-- Returns {value, fence}, or an empty array when the key does not exist. A key that is not a
-- fenced key fails with WRONGTYPE.
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return {}
end
if kind ~= 'hash' or redis.call('hlen', KEYS[1]) ~= 2 then
  return redis.error_reply('WRONGTYPE the key is not a fenced key')
end
local got = redis.call('hmget', KEYS[1], 'value', 'fence')
if not got[1] or not got[2] or not string.match(got[2], '^[1-9]%d*$') or #got[2] > 20
    or (#got[2] == 20 and got[2] > '18446744073709551615') then
  return redis.error_reply('WRONGTYPE the key is not a fenced key')
end
return got
