-- Raises the fencing counter to at least `token` (a quorum lock's write-back: later
-- acquisitions on this node then mint above it). Keeps it alive for at least `ttl` ms, so that
-- a seed after it expires comes from a clock that has moved `ttl` past the token. A counter
-- without an expiry (Redisson's RFencedLock's, or a persistent one: `ttl` 0) keeps none:
-- relock never gives a counter an expiry it did not have, so no client's tokens go back.
local function fence(counter, token, ttl)
  local current = tonumber(redis.call('get', counter) or '0')
  local pttl = redis.call('pttl', counter)
  if current < token then
    if ttl > 0 and pttl ~= -1 then
      redis.call('set', counter, string.format('%.0f', token), 'px', ttl)
    else
      redis.call('set', counter, string.format('%.0f', token), 'keepttl')
    end
  elseif ttl > 0 and pttl >= 0 and pttl < ttl then
    redis.call('pexpire', counter, ttl)
  end
end

