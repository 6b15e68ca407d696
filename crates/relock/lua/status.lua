-- status: one consistent read of a lock for operators (`Lock::status`, `relock status`,
-- `relock watch`): a script runs alone, so the holders, the lease, the counter and the line
-- are all from one moment. Reads only, and flagged so (the `no-writes` shebang line that
-- `relock::lua` puts first): Redis then runs it during a CLIENT PAUSE WRITE (a failover)
-- instead of holding it back.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing counter
-- KEYS[3]  the line (a fair lock, lib/queue.lua); absent for a plain lock
-- ARGV[1]  unused (kept so that every script documents ARGV[1])
--
-- Returns {fields, pttl, counter, counter_pttl, line}: fields is HGETALL of the lock (field,
-- count, ...), pttl and counter_pttl are PTTLs (-2: no key), counter is the counter's value
-- (false: none), line is {field, ticket, deadline or false, ...} in queue order.
-- Or {'wrongtype', key} when a key has another type than a lock's (or the counter is not a
-- number), naming that key; or {'notalock', key, found} when the lock's key is a hash that is
-- not a lock (lib/shape.lua), saying what was found.
local kinds = {'hash', 'string', 'zset'}
for i, key in ipairs(KEYS) do
  local t = redis.call('type', key)['ok']
  if t ~= 'none' and t ~= kinds[i] then
    return {'wrongtype', key}
  end
end
local found = not_a_lock(KEYS[1])
if found then
  return {'notalock', KEYS[1], found}
end
local counter = redis.call('get', KEYS[2])
-- INCR's own rule: a counter is a decimal integer (no sign, fraction, exponent or hex here).
if counter and (not string.match(counter, '^%d+$') or #counter > 19) then
  return {'wrongtype', KEYS[2]}
end
local fields = redis.call('hgetall', KEYS[1])
local line = {}
if KEYS[3] then
  -- The waiters are the members scored as tickets (lib/queue.lua), in the order of the tickets.
  local queue = redis.call('zrange', KEYS[3], '1000000000000000', '+inf', 'byscore', 'withscores')
  for i = 1, #queue, 2 do
    line[#line + 1] = queue[i]
    line[#line + 1] = queue[i + 1]
    line[#line + 1] = redis.call('zscore', KEYS[3], 'alive:' .. queue[i]) or false
  end
end
return {fields, redis.call('pttl', KEYS[1]), counter or false, redis.call('pttl', KEYS[2]), line}
