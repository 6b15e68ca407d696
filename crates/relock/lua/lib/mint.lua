-- The fencing counter. While it exists, a token is the next integer; when it does not (never
-- used, expired `counter_ttl` ms after it was seeded, or lost in an empty restart or a
-- failover), it is seeded again from the server clock in µs. Every token is at most the clock
-- of the server that minted it (a counter starts at the clock and gains 1 per grant, and one
-- lock is never granted twice in a µs), and a counter lives `counter_ttl` ms, so a seed is
-- above every token the lost counter handed out unless the clock stepped back by more than
-- that (docs/safety.md has the argument). So the hot path is one INCR: the counter's lifetime
-- is set when it is seeded and never touched again.
--
-- A counter below 10^15 (µs since 1970: September 2001) was not seeded by relock: it is new (1),
-- or Redisson's RFencedLock created it (it counts from 1, with no TTL). It is seeded from the
-- clock too, so relock's tokens never fall back to that count, and it gets a TTL.
local function mint(counter, counter_ttl)
  local token = redis.call('incr', counter)
  if token < 1000000000000000 then
    local t = redis.call('time')
    token = tonumber(t[1]) * 1000000 + tonumber(t[2])
    redis.call('set', counter, string.format('%.0f', token), 'px', counter_ttl)
  end
  return token
end

