-- After a read hold of `lock` is gone: the hash lives on as long as its longest live hold.
-- A write hold (a downgrade's writer) keeps it as it is. Readers whose timeout key has
-- expired (their holder died, or stopped renewing) are dropped: they hold nothing any more.
-- With no live hold left the hash is deleted, and `message` published on `channel`.
-- `prefix` is `{name}:` (or `name:` for a name with its own tag): a reader's timeout key is
-- prefix .. field .. ':rwlock_timeout:1' (Redisson's counts past 1 have :2, :3, ... too,
-- which never outlive :1). Returns true if the lock was freed.
local function settle_readers(lock, channel, prefix, publish, message)
  local longest, writer = 0, false
  for _, field in ipairs(redis.call('hkeys', lock)) do
    if field ~= 'mode' then
      if string.sub(field, -6) == ':write' then
        writer = true
      else
        local ttl = redis.call('pttl', prefix .. field .. ':rwlock_timeout:1')
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
    redis.call('pexpire', lock, longest)
    return false
  end
  redis.call('del', lock)
  redis.call(publish, channel, message)
  return true
end

