-- check: whether a lock is held, and one field's value, after making sure the key is a lock
-- (lib/shape.lua): `is_locked`, `hold_count`, `remaining_lease` and `is_held_by_current_task`, a
-- read-write lock's `is_locked` (its `mode`), so that a data key under a lock's name is
-- reported as such instead of read as a held lock.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  a field (a hold's, or "mode"), or "" for none
--
-- Returns {exists (0 or 1), the field's value or false, the lock's PTTL}; NOTALOCK if the key
-- is a hash that is not a lock, WRONGTYPE if it is of another type.
ensure_lock(KEYS[1])
local value = false
if ARGV[1] ~= '' then
  value = redis.call('hget', KEYS[1], ARGV[1])
end
return {redis.call('exists', KEYS[1]), value, redis.call('pttl', KEYS[1])}
