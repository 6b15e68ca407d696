-- fenced_set: writes a fenced key's value together with the token it was written under,
-- refusing a token lower than the highest one the key has accepted (the storage-side check of
-- fencing tokens). Tokens are compared as decimal strings (by length, then digits), never as
-- Lua numbers, which would round tokens above 2^53.
--
-- KEYS[1]  the fenced key: a hash of `value` and `fence` (the highest token accepted)
-- ARGV[1]  the writer's token, in decimal without leading zeros
-- ARGV[2]  the value
--
-- Returns {1, token} (written) or {0, fence} (refused: the key has accepted the higher token
-- `fence`; nothing was written). A key that is not a fenced key (another type, or a hash
-- other than exactly `value` and a decimal `fence` that fits 64 bits) fails with WRONGTYPE,
-- left as it was.
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'hash' then
  return redis.error_reply('WRONGTYPE the key is not a fenced key')
end
local fence = redis.call('hget', KEYS[1], 'fence')
-- Exactly `value` and a canonical `fence`: a data hash that merely has a `fence` field (a
-- row kept in Redis) is not taken over.
if kind == 'hash' and (not fence or redis.call('hlen', KEYS[1]) ~= 2
    or redis.call('hexists', KEYS[1], 'value') == 0
    or not string.match(fence, '^[1-9]%d*$') or #fence > 20
    or (#fence == 20 and fence > '18446744073709551615')) then
  return redis.error_reply('WRONGTYPE the key is not a fenced key (a hash of exactly value and fence)')
end
local token = ARGV[1]
if fence and (#fence > #token or (#fence == #token and fence > token)) then
  return {0, fence}
end
redis.call('hset', KEYS[1], 'value', ARGV[2], 'fence', token)
return {1, token}
