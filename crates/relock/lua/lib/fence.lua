-- Raises the fencing counter to at least `token` (a quorum lock's write-back: later
-- acquisitions on this node then mint above it). Keeps it alive for at least `ttl` ms, so that
-- a seed after it expires comes from a clock that has moved `ttl` past the token.
local function fence(counter, token, ttl)
  local current = tonumber(redis.call('get', counter) or '0')
  if current < token then
    redis.call('set', counter, string.format('%.0f', token), 'px', ttl)
  elseif redis.call('pttl', counter) < ttl then
    redis.call('pexpire', counter, ttl)
  end
end

