-- The fencing counter. While it exists, a token is the next integer; when it does not (never
-- used, expired `counter_ttl` ms after it was seeded, or lost in an empty restart or a
-- failover), it is seeded again from the server clock in µs. Every token is at most the clock
-- of the server that minted it (a counter starts at the clock and gains 1 per grant, and one
-- lock is never granted twice in a µs), and a counter lives `counter_ttl` ms, so a seed is
-- above every token the lost counter handed out unless the clock stepped back by more than
-- that (docs/safety.md has the argument). So the hot path is one INCR: the counter's lifetime
-- is set when it is seeded and never touched again.
--
-- `counter_ttl` 0 (`ClientBuilder::persistent_fencing_counters`): a counter relock creates
-- never expires, as Redisson's RFencedLock keeps its own; then a Redisson client that comes
-- after relock counts on from relock's tokens instead of starting again at 1.
--
-- A counter below 10^15 (µs since 1970: September 2001) was not seeded by relock: it is new (1),
-- or Redisson's RFencedLock created it (it counts from 1, with no TTL). It is raised to the
-- clock too, so relock's tokens never fall back to that count; a counter that existed keeps
-- its own life (KEEPTTL): relock never gives an expiry to a counter another client created,
-- and never lowers one, so Redisson's next token is above relock's.
local function mint(counter, counter_ttl)
  local token = redis.call('incr', counter)
  if token < 1000000000000000 then
    local t = redis.call('time')
    local seed = string.format('%.0f', tonumber(t[1]) * 1000000 + tonumber(t[2]))
    if token == 1 and counter_ttl > 0 then
      redis.call('set', counter, seed, 'px', counter_ttl)
    else
      redis.call('set', counter, seed, 'keepttl')
    end
    token = tonumber(seed)
  end
  return token
end

