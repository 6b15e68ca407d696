-- reenter: one more hold count on an existing hold, only if that hold still exists.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  lease in ms this re-entry needs (the lease is lengthened to it, never shortened)
-- ARGV[2]  the hold's field, <client_id>:<n>
-- KEYS[2]  (a read hold of a read-write lock only) its timeout key, lengthened too
--
-- Returns the new hold count, or nil if the hold is gone (its lease ran out, it was deleted or
-- released): nothing is created then, so a late re-entry can never resurrect a hold.
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
local lease = tonumber(ARGV[1])
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
extend(KEYS[1], lease)
if KEYS[2] then
  extend(KEYS[2], lease)
end
return count
