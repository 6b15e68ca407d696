-- rw_write_acquire: a fresh write hold of a read-write lock (Redisson's RReadWriteLock
-- layout): only when nobody holds it, readers included. Never a re-entry; a read holder is
-- refused by the client before it gets here (no upgrade).
--
-- KEYS[1]  the lock hash (see rw_read_acquire.lua)
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- ARGV[1]  lease in ms
-- ARGV[2]  the new hold's field, <client_id>:<n>:write
-- ARGV[3]  ms the fencing counter lives once seeded (the grace)
--
-- Returns {1, token} (granted: the token is above every token minted before it, reads
-- included) or {0, pttl} (held).
-- A key of another type fails with WRONGTYPE and is left untouched.
local lock = KEYS[1]
if redis.call('exists', lock) == 0 then
  local token = mint(KEYS[2], tonumber(ARGV[3]))
  redis.call('hset', lock, 'mode', 'write', ARGV[2], 1)
  redis.call('pexpire', lock, tonumber(ARGV[1]))
  return {1, token}
end
ensure_lock(lock)
return {0, redis.call('pttl', lock)}
