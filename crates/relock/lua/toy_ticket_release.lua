-- toy_ticket_release: drop one count of a toy ticket lock's hold (or the whole hold); when the
-- lock becomes free, tell its waiters: "next" (one waiter looks: at most one is in line) or
-- "all" (every waiter looks, and the first of the line takes it).
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the line, toy_ticket_line:{name}
-- ARGV[1]  the hold's field, <client_id>:<n>
-- ARGV[2]  "1": drop one count; "all": drop the hold whatever its count
-- ARGV[3]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[4]  the lock's channel, toy_ticket__channel:{name}
--
-- Returns 1 (released: the lock is free and the waiters were told), 0 (counts are left) or
-- nil (this hold is not here).
local released = drop_hold(KEYS[1], ARGV[1], ARGV[2])
if released == 1 then
  local message = 'next'
  if redis.call('zcard', KEYS[2]) > 1 then
    message = 'all'
  end
  redis.call(ARGV[3], ARGV[4], message)
end
return released
