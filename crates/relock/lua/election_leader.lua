-- election_leader: an election's leader as the server has it (read-only).
--
-- KEYS[1]  the election's lock hash
-- KEYS[2]  the election's record
-- ARGV[1]  (none)
--
-- Returns (as strings) {1, term, field, value, pttl, ended_term, ended_how} while the record's owner holds
-- the lock (a leader that has stated its value), else {0, '', '', '', pttl of the lock,
-- ended_term, ended_how}; ended_* are '' when no term ended by a resignation recently.
local owner = redis.call('hget', KEYS[2], 'owner')
local ended = redis.call('hmget', KEYS[2], 'ended_term', 'ended_how')
local pttl = redis.call('pttl', KEYS[1])
if owner and redis.pcall('hexists', KEYS[1], owner) == 1 then
  local t = redis.call('hmget', KEYS[2], 'term', 'value')
  return {'1', t[1] or '', owner, t[2] or '', tostring(pttl), ended[1] or '', ended[2] or ''}
end
return {'0', '', '', '', tostring(pttl), ended[1] or '', ended[2] or ''}
