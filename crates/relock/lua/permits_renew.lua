-- permits_renew: the renewal of a batch of one client's permits (one call for up to a batch).
-- A permit is renewed only while it is there and its lease has not ended: an expired permit is
-- never brought back (its slot is free for anyone from then on). A lease is never shortened.
--
-- KEYS[i]    the timeouts of permit i's semaphore, {name}:timeout (KEYS[1] is the first's)
-- ARGV[1]    lease in ms
-- ARGV[1+i]  the id of permit i: hex digits, stored as bytes
--
-- Returns an array with, for each permit i, 1 (its lease now ends ARGV[1] ms from now, or
-- later) or 0 (gone: released, expired, reclaimed, or deleted).
local now = server_ms()
local ends = now + tonumber(ARGV[1])
local result = {}
for i = 1, #KEYS do
  local id = member(ARGV[1 + i])
  local current = redis.pcall('zscore', KEYS[i], id)
  if type(current) == 'string' and tonumber(current) > now then
    if tonumber(current) < ends then
      redis.call('zadd', KEYS[i], 'xx', ends, id)
    end
    result[i] = 1
  else
    result[i] = 0
  end
end
return result
