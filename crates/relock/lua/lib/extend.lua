-- Lengthens `key`'s time to live to `ms` if it has less; never shortens it.
local function extend(key, ms)
  local pttl = redis.call('pttl', key)
  if pttl >= 0 and pttl < ms then
    redis.call('pexpire', key, ms)
  end
end

