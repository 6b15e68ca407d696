-- toy_ticket_leave: a waiter of a toy ticket lock that gave up leaves the line; if it was
-- first and the lock is free, every waiter looks again ("all"), so the new first takes it.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the line, toy_ticket_line:{name}
-- KEYS[3]  the line's heartbeats, toy_ticket_alive:{name}
-- ARGV[1]  the waiter's field
-- ARGV[2]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[3]  the lock's channel, toy_ticket__channel:{name}
--
-- Returns 1 if the field was in line, 0 if not.
local first = redis.call('zrange', KEYS[2], 0, 0)[1]
local was = redis.call('zrem', KEYS[2], ARGV[1])
redis.call('zrem', KEYS[3], ARGV[1])
if was == 1 and first == ARGV[1] and redis.call('exists', KEYS[1]) == 0
    and redis.call('zcard', KEYS[2]) > 0 then
  redis.call(ARGV[2], ARGV[3], 'all')
end
return was
