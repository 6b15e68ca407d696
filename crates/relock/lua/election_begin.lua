-- election_begin: the leader of an election states its value: at the start of its term
-- (ARGV[6] "elected") or later (ARGV[6] "value", a proclaim), only while it still holds the
-- election's lock, and for a proclaim only while the record is its own.
--
-- KEYS[1]  the election's lock hash (a fair lock)
-- KEYS[2]  the election's record, relock_election:{<name>} (a hash: term, owner, value, and
--          ended_term, ended_how of the last term that ended by a resignation)
-- ARGV[1]  the leader's field, <client_id>:<n>
-- ARGV[2]  its term (the fencing token of its hold)
-- ARGV[3]  its value
-- ARGV[4]  the publish command
-- ARGV[5]  the election's channel, relock_election_channel:{<name>} (an argument, not a key)
-- ARGV[6]  "elected" or "value"
-- ARGV[7]  the watchdog lease (ms): the record's TTL
--
-- Returns 1 (recorded, and "<ARGV[6]>\n<term>\n<field>\n<value>" published) or 0 (the lock is
-- not held by ARGV[1], or a proclaim found another's record: nothing is written).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
if ARGV[6] == 'value' and redis.call('hget', KEYS[2], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('hset', KEYS[2], 'term', ARGV[2], 'owner', ARGV[1], 'value', ARGV[3])
-- The record lives a watchdog lease, renewed with the lock in every watchdog round
-- (election_renew.lua), so it outlives the lock's first lease whatever that is (a handoff's
-- is shorter) and a leader's that ends without a resignation by at most a lease.
redis.call('pexpire', KEYS[2], ARGV[7])
redis.call(ARGV[4], ARGV[5], ARGV[6] .. '\n' .. ARGV[2] .. '\n' .. ARGV[1] .. '\n' .. ARGV[3])
return 1
