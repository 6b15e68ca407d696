-- reenter: one more hold count on an existing hold, only if that hold still exists.
--
-- KEYS[1]  the lock hash
-- ARGV[1]  lease in ms this re-entry needs (the lease is lengthened to it, never shortened)
-- ARGV[2]  the hold's field, <client_id>:<n>
-- KEYS[2]  (a read hold of a read-write lock only) its timeout key, lengthened too
--
-- Returns the new hold count, or nil if the hold is gone (its lease ran out, it was deleted or
-- released; for a read hold, its timeout key is gone): nothing is created then, so a late re-entry can never resurrect a hold.
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
-- A read hold lives as long as its timeout key, not as long as the hash, which lives as long as
-- the longest reader: a reader whose key has expired is gone even while others keep the hash.
if KEYS[2] and redis.call('exists', KEYS[2]) == 0 then
  return nil
end
local lease = tonumber(ARGV[1])
local count = redis.call('hincrby', KEYS[1], ARGV[2], 1)
extend(KEYS[1], lease)
if KEYS[2] then
  extend(KEYS[2], lease)
end
return count
