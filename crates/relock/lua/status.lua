-- status: one consistent read of a lock for operators (`Lock::status`, `relock status`,
-- `relock watch`): a script runs alone, so the holders, the lease, the counter and the line
-- are all from one moment. Reads only.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing counter
-- KEYS[3]  the queue (a fair lock), KEYS[4] the heartbeats; absent for a plain lock
-- ARGV[1]  unused (kept so that every script documents ARGV[1])
--
-- Returns {fields, pttl, counter, counter_pttl, line}: fields is HGETALL of the lock (field,
-- count, ...), pttl and counter_pttl are PTTLs (-2: no key), counter is the counter's value
-- (false: none), line is {field, ticket, deadline or false, ...} in queue order. A lock key
-- that is not a hash fails with WRONGTYPE.
local fields = redis.call('hgetall', KEYS[1])
local line = {}
if KEYS[3] then
  local queue = redis.call('zrange', KEYS[3], 0, -1, 'withscores')
  for i = 1, #queue, 2 do
    line[#line + 1] = queue[i]
    line[#line + 1] = queue[i + 1]
    line[#line + 1] = redis.call('zscore', KEYS[4], queue[i]) or false
  end
end
return {fields, redis.call('pttl', KEYS[1]), redis.call('get', KEYS[2]) or false,
  redis.call('pttl', KEYS[2]), line}
