-- After a read hold of `lock` is gone: the hash lives on as long as its longest live hold.
-- A write hold (a downgrade's writer) keeps it as it is. A reader's lease is its timeout keys,
-- prefix .. field .. ':rwlock_timeout:' .. i for each of its counts i (relock writes :1 only;
-- Redisson one per re-entry, each with that re-entry's lease); a reader whose keys have all
-- expired (its holder died, or stopped renewing) is dropped: it holds nothing any more.
-- With no live hold left the hash is deleted, and `message` published on `channel`. When the
-- hash's life gets shorter, "1" is published too: waiters that took its old PTTL as their
-- sleep bound look again. `prefix` is `{name}:` (or `name:` for a name with its own tag).
-- Returns true if the lock was freed.
local function settle_readers(lock, channel, prefix, publish, message)
  local longest, writer = 0, false
  local holds = redis.call('hgetall', lock)
  for h = 1, #holds, 2 do
    local field, count = holds[h], tonumber(holds[h + 1]) or 0
    if field ~= 'mode' then
      if string.sub(field, -6) == ':write' then
        writer = true
      else
        local ttl = 0
        for i = 1, math.max(count, 1) do
          local t = redis.call('pttl', prefix .. field .. ':rwlock_timeout:' .. i)
          if t > ttl then
            ttl = t
          end
        end
        if ttl > 0 then
          if ttl > longest then
            longest = ttl
          end
        else
          redis.call('hdel', lock, field)
        end
      end
    end
  end
  if writer then
    return false
  end
  if longest > 0 then
    local current = redis.call('pttl', lock)
    if current < 0 or longest < current then
      redis.call(publish, channel, 1)
    end
    redis.call('pexpire', lock, longest)
    return false
  end
  redis.call('del', lock)
  redis.call(publish, channel, message)
  return true
end

