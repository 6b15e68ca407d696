-- permits_acquire: take one permit under the id ARGV[1] for ARGV[2] ms if one is available,
-- after giving back the permits whose lease has ended. Redisson's
-- `RPermitExpirableSemaphore.tryAcquire` on the same keys and channel, with the server's clock.
--
-- KEYS[1]  the semaphore's count: a string, the number of available permits (missing = 0)
-- KEYS[2]  its timeouts, {name}:timeout: permit id (16 bytes) -> end of its lease (ms)
-- ARGV[1]  the new permit's id: 32 hex digits, stored as its 16 bytes
-- ARGV[2]  its lease in ms (>= 1, checked by the client)
-- ARGV[3]  the publish command: "publish" (or "spublish" on a cluster)
-- ARGV[4]  its channel, redisson_sc:{name} (an argument, not a key: an ACL user needs a channel grant for
--          it, `&`, not a key grant, `~`)
-- KEYS[3]  optional: the id's request key, relock_request:{name}:<id>. It exists once a
--          give-back of this id ran (after an acquire whose reply never came): a copy of that
--          acquire landing later takes nothing, rather than a permit nobody holds.
--
-- Returns {1, available}: taken (`available` is what is left); {0, ms}: none available, and
-- the first lease to end ends in `ms` (then its permit comes back without a message); or
-- {0, -1}: none available, and no lease ends by itself.
-- A key of another type, or a count that is not an integer, fails with WRONGTYPE, and nothing
-- is changed.
local bad = check_count(KEYS[1])
if bad then
  return bad
end
local now = server_ms()
-- A copy of an acquire that already ran (a pool that resends after a reconnect, or an
-- attempt that lands late): its id holds its permit already; take nothing more.
if redis.call('zscore', KEYS[2], member(ARGV[1])) then
  return {1, tonumber(redis.call('get', KEYS[1]) or '0')}
end
if KEYS[3] and redis.call('exists', KEYS[3]) == 1 then
  return {0, -1}
end
reclaim(KEYS[1], ARGV[4], KEYS[2], now, ARGV[3])
local available = tonumber(redis.call('get', KEYS[1]) or '0')
if available >= 1 then
  local left = redis.call('decrby', KEYS[1], 1)
  redis.call('zadd', KEYS[2], now + tonumber(ARGV[2]), member(ARGV[1]))
  -- As Redisson: the timeouts live as long as the count (if it has a TTL).
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then
    redis.call('pexpire', KEYS[2], ttl)
  end
  return {1, left}
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'withscores')
if first[2] and tonumber(first[2]) < NEVER then
  return {0, math.max(tonumber(first[2]) - now, 1)}
end
return {0, -1}
