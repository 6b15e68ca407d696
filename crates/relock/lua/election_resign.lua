-- election_resign: a leader gives up its term, before it releases the election's lock (which
-- hands the lock to the first standby in line): the record says the term ended by a
-- resignation, and observers are told. Only the leader's own record is touched.
--
-- KEYS[1]  the election's record
-- ARGV[1]  the leader's field
-- ARGV[2]  its term
-- ARGV[3]  the publish command
-- ARGV[4]  the election's channel
-- ARGV[5]  how long the record of the ended term is kept (ms), for observers
--
-- Returns 1 (resigned: "resigned\n<term>\n<field>\n" published) or 0 (the record is not this
-- leader's: its term had already ended).
if redis.call('hget', KEYS[1], 'owner') ~= ARGV[1] then
  return 0
end
redis.call('hdel', KEYS[1], 'owner', 'value', 'term')
redis.call('hset', KEYS[1], 'ended_term', ARGV[2], 'ended_how', 'resigned')
redis.call('pexpire', KEYS[1], ARGV[5])
redis.call(ARGV[3], ARGV[4], 'resigned\n' .. ARGV[2] .. '\n' .. ARGV[1] .. '\n')
return 1
