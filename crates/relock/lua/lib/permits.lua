-- The permit-expirable semaphore's shared functions (permits_*.lua): Redisson's
-- RPermitExpirableSemaphore layout. The count is a string (available permits, missing = 0); the
-- timeouts are a sorted set: member = a permit id as its 16 raw bytes (Redisson sends the
-- decoded hex), score = when its lease ends, in ms since 1970. Redisson's permits without a
-- lease have the score 922337203685477.

-- Redisson's score for a permit that never expires.
local NEVER = 922337203685477

-- The server's clock in ms. (Redisson sends its client's clock instead: see docs/data-layout.md.)
local function server_ms()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A permit id as it is stored: the hex text a caller sees, decoded to bytes.
local function member(hex)
  return (string.gsub(hex, '%x%x', function(pair)
    return string.char(tonumber(pair, 16))
  end))
end

