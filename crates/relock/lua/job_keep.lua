-- job_keep: a run-at-most-once job that finished before its at-least time keeps its lock for
-- what is left of that time, instead of releasing it: the hold stays as it is (Redisson sees
-- it held by the job's field) and its TTL becomes what is left. Only the job's own hold is
-- touched; shortening is safe because the hold is exclusive and its lease (the at-most time)
-- is at least as long as the at-least time.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  the hold's field, <client_id>:<n>
-- ARGV[2]  ms left of the at-least time
--
-- Returns 1 (kept: the lock now ends in ARGV[2] ms, or sooner if it already did) or 0 (the hold
-- is not here: its lease ran out, it was deleted or force-unlocked; nothing is created).
if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return 0
end
local keep = tonumber(ARGV[2])
local pttl = redis.call('pttl', KEYS[1])
if pttl < 0 or pttl > keep then
  redis.call('pexpire', KEYS[1], keep)
end
return 1
