-- A fresh hold of `lock` under `field` if the lock is free (acquire.lua, batch.lua).
-- Returns {1, token} or {0, pttl of the holder}; WRONGTYPE or NOTALOCK (nothing changed) for a
-- key that is not a lock hash.
local function acquire(lock, counter, lease, field, counter_ttl)
  if redis.call('exists', lock) == 0 then
    -- Minted first: a counter key of another type fails with WRONGTYPE before anything is
    -- written, so the lock is not left held by nobody.
    local token = mint(counter, counter_ttl)
    redis.call('hset', lock, field, 1)
    redis.call('pexpire', lock, lease)
    return {1, token}
  end
  -- WRONGTYPE if the key is not a hash, NOTALOCK if it is a hash that is not a lock (a data
  -- key under the lock's name): never taken for a held lock and waited on (lib/shape.lua).
  local pttl = ensure_lock(lock)
  return {0, pttl}
end

