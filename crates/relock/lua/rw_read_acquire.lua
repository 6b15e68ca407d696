-- rw_read_acquire: a fresh read hold of a read-write lock (Redisson's RReadWriteLock layout),
-- under a field that no hold ever had; never a re-entry.
--
-- KEYS[1]  the lock hash: `mode` -> "read" | "write"; a read hold's field <client_id>:<n> ->
--          count; a write hold's field <client_id>:<n>:write -> count
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- KEYS[3]  this hold's timeout key, {name}:<field>:rwlock_timeout:1 (its own lease: readers'
--          leases are independent)
-- ARGV[1]  lease in ms
-- ARGV[2]  the new hold's field, <client_id>:<n>
-- ARGV[3]  ms the fencing counter lives once seeded (the grace)
-- ARGV[4]  the field of this owner's write hold ("" if none): a write holder may take read
--          holds (a downgrade)
--
-- Returns {1, token} (granted) or {0, pttl} (a writer holds it, or the key is a lock of
-- another kind). A read token is unique and above every token minted before it, but not
-- exclusive: readers holding at once have different tokens.
-- A key of another type fails with WRONGTYPE and is left untouched.
local lock, lease = KEYS[1], tonumber(ARGV[1])
-- A data hash under the lock's name (even one with a `mode` field) is never joined.
ensure_lock(lock)
local mode = redis.call('hget', lock, 'mode')
local free = mode == false and redis.call('exists', lock) == 0
local shared = mode == 'read'
local downgrade = mode == 'write' and ARGV[4] ~= '' and redis.call('hexists', lock, ARGV[4]) == 1
if not (free or shared or downgrade) then
  return {0, redis.call('pttl', lock)}
end
local token = mint(KEYS[2], tonumber(ARGV[3]))
if free then
  redis.call('hset', lock, 'mode', 'read')
end
redis.call('hset', lock, ARGV[2], 1)
redis.call('set', KEYS[3], 1, 'px', lease)
-- The hash lives as long as its longest hold; a new key has no TTL yet (PTTL -1).
if redis.call('pttl', lock) < lease then
  redis.call('pexpire', lock, lease)
end
return {1, token}
