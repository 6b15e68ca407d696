-- Takes one count (mode "1") or the whole hold (mode "all") of the hold `field` off `lock`.
-- Returns nil (this hold is not here), 0 (counts are left) or 1 (the field is gone).
-- The last count costs one HDEL: a lock hash holds one field (its one holder), so removing it
-- removes the key, and HDEL's reply says whether the field was there.
local function drop_hold(lock, field, mode)
  if mode == 'all' then
    if redis.call('hdel', lock, field) == 0 then
      return nil
    end
    return 1
  end
  if redis.call('hexists', lock, field) == 0 then
    return nil
  end
  if redis.call('hincrby', lock, field, -1) > 0 then
    return 0
  end
  redis.call('hdel', lock, field)
  return 1
end

-- A plain lock's release (release.lua, batch.lua): drop_hold, then Redisson's unlock message
-- once the field is gone. Checking that no other field is left would cost a call per release,
-- for a hash written by hand; its waiters are then woken for nothing, find it held, and park.
local function release(lock, channel, field, mode, publish)
  local released = drop_hold(lock, field, mode)
  if released == 1 then
    redis.call(publish, channel, 0)
  end
  return released
end

