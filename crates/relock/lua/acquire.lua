-- acquire: a fresh hold, under a field that no hold ever had; never a re-entry.
--
-- KEYS[1]  the lock hash (the lock's name); field <client_id>:<n> -> hold count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- ARGV[1]  lease in ms (PEXPIRE of the lock)
-- ARGV[2]  the new hold's field, <client_id>:<n>
-- ARGV[3]  ms the fencing counter lives once seeded (the grace); never extended
--
-- Returns
--   {1, token}   acquired; token = counter + 1, or server TIME in µs if there is no counter
--   {0, pttl}    held (by anyone, this client included); pttl is its remaining lease
--                (-1: no expiry)
-- Re-entering an existing hold is `reenter.lua`'s job: a fresh acquisition that finds its own
-- field (it cannot, fields are never reused) is refused like any other.
-- A key of another type fails with WRONGTYPE and is left untouched.
local lease = tonumber(ARGV[1])

if redis.call('exists', KEYS[1]) == 0 then
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], lease)
  return {1, mint(KEYS[2], tonumber(ARGV[3]))}
end

-- HLEN fails with WRONGTYPE if the key is not a lock hash.
redis.call('hlen', KEYS[1])
return {0, redis.call('pttl', KEYS[1])}
