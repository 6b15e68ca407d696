-- job_keep: a run-at-most-once job that finished before its at-least time keeps its lock for
-- what is left of that time, instead of releasing it. The hold moves to a fresh field of the
-- same client that no hold ever has (count 1): the lock stays taken (Redisson, and relock,
-- see it held) but no late re-entry of the finished run can find, count or lengthen it; its
-- TTL becomes what is left, or stays where it is when that is sooner: the lease is the
-- at-most time, counted from the grant on the server, and ARGV[2] from the client's start
-- (when the grant's reply came, later), so a keep never lengthens the lock past the at-most
-- time. Only the job's own hold is touched, and only when it is alone (count 1); shortening
-- is safe because the hold is exclusive and its lease is at least the at-least time.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  the hold's field, <client_id>:<n>
-- ARGV[2]  ms left of the at-least time
-- ARGV[3]  the fresh field the kept hold moves to, <client_id>:<n>
-- ARGV[4]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[5]  the release channel, redisson_lock__channel:{name}
--
-- A kept hold publishes "1", which Redisson's lock waiters (its LockPubSub) and relock's take
-- as "wake every waiter": each waiter that parked until the at-most lease it read tries again,
-- reads the shorter TTL, and parks until the kept time's end instead of sleeping through it.
-- ("0" would wake one waiter per client.) Key expiry publishes nothing, so this is the only
-- news they get.
--
-- Returns 1 (kept: the lock now ends in ARGV[2] ms, or sooner at its lease's end), 2 (not
-- kept: the hold has more than one count, a re-entry landed; the caller releases it) or 0 (the
-- hold is not here: its lease ran out, it was deleted or force-unlocked; nothing is created).
local count = redis.call('hget', KEYS[1], ARGV[1])
if not count then
  return 0
end
if count ~= '1' then
  return 2
end
redis.call('hset', KEYS[1], ARGV[3], 1)
redis.call('hdel', KEYS[1], ARGV[1])
local lease = redis.call('pttl', KEYS[1])
if lease < 0 or tonumber(ARGV[2]) < lease then
  redis.call('pexpire', KEYS[1], ARGV[2])
end
redis.call(ARGV[4], ARGV[5], '1')
return 1
