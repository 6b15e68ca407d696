-- The rate limiter's shared functions (rate_*.lua): Redisson's RRateLimiter layout.
-- KEYS are always the five of Redisson's scripts, in its order:
--   [1] the config hash `name`: rate, interval (ms), type (0 overall, 1 per client),
--       keepAliveTime (ms, 0: none)
--   [2] `{name}:value`, [3] `{name}:value:<client id>`: the permits left (a string integer)
--   [4] `{name}:permits`, [5] `{name}:permits:<client id>`: the permit records, a sorted set
--       scored by the ms the permits were taken at; a member is Redisson's
--       struct.pack('Bc0I', #id, id, permits): a length byte, a 16-byte random id and the
--       permit count as 4 bytes.

-- The server's clock in ms. (Redisson sends its client's clock instead: see docs/data-layout.md.)
local function rate_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The index of the first key that holds something the limiter never keeps there, or nil:
-- the config a hash of Redisson's four fields only, a value a string, the records a sorted
-- set. Checked before anything is written, so a refused call leaves every key as it was.
local function rate_foreign_key(keys)
  local want = {'hash', 'string', 'string', 'zset', 'zset'}
  -- Only the limiter's own five: a script's further keys (a request key) are its own.
  local config = nil
  for i = 1, math.min(#keys, #want) do
    local found = redis.call('type', keys[i])['ok']
    if found ~= 'none' and found ~= want[i] then
      return i
    end
    config = config or found
  end
  if config == 'hash' then
    local known = 0
    for _, v in ipairs(redis.call('hmget', keys[1], 'rate', 'interval', 'type', 'keepAliveTime')) do
      if v then
        known = known + 1
      end
    end
    if redis.call('hlen', keys[1]) ~= known then
      return 1
    end
  end
  return nil
end

-- The config: rate, interval (ms), type ('0' or '1') and keep-alive (ms, 0: none); nil when
-- the limiter has none (Redisson: "RateLimiter is not initialized").
local function rate_config(config)
  local c = redis.call('hmget', config, 'rate', 'interval', 'type', 'keepAliveTime')
  if not c[1] or not c[2] or not c[3] then
    return nil
  end
  return tonumber(c[1]), tonumber(c[2]), c[3], tonumber(c[4] or '0') or 0
end

-- The value and records keys of the config's type: the shared ones, or this client's.
local function rate_state(keys, kind)
  if kind == '1' then
    return keys[3], keys[5]
  end
  return keys[2], keys[4]
end

-- The permits of a list of records.
local function rate_sum(records)
  local sum = 0
  for _, v in ipairs(records) do
    local _, permits = struct.unpack('Bc0I', v)
    sum = sum + permits
  end
  return sum
end

-- The rate less the permits of every record (call it once the expired ones are removed), at
-- least 0: the permits left whatever rate the value was written under. A per-client value is
-- this on every call (another client's set changes the rate it counts against and starts only
-- its own state afresh); a shared value above the rate (a config set lower while the state
-- lived) is cut to it (Redisson's updateRate).
local function rate_clamp(rate, permits_key)
  return math.max(0, rate - rate_sum(redis.call('zrange', permits_key, 0, -1)))
end

-- A ms time as an integer string (a Lua number prints as 1.7e+12 past 14 digits).
local function rate_ms(ms)
  return string.format('%.0f', ms)
end

-- Redisson's keep-alive: with one, the config, value and records live at least that long
-- from this call, or at least `least` ms when that is longer (a refused acquire's waiter
-- sleeps its delay and must not wake to keys that expired meanwhile); without, the value and records
-- live as long as the config (when it has a TTL). Either way the value and records, when they
-- have a TTL, live at least `interval` ms from this call: a record counts for an interval
-- after its grant, and keys another client's set left with an old keep-alive's TTL (it
-- starts only its own state afresh) must not expire inside that window.
local function rate_keep_alive(config, value, permits, interval, least)
  local floor = math.max(interval, least or 0)
  local keep = redis.call('hget', config, 'keepAliveTime')
  if keep ~= false and tonumber(keep) > 0 then
    -- Never shortened: a grant right after a refusal must not cut the refused waiter's time.
    local ttl = math.max(tonumber(keep), least or 0)
    for _, key in ipairs({config, value, permits}) do
      local want = ttl
      if key ~= config then
        want = math.max(ttl, floor)
      end
      if redis.call('pttl', key) < want then
        redis.call('pexpire', key, rate_ms(want))
      end
    end
  else
    local ttl = redis.call('pttl', config)
    if ttl > 0 then
      redis.call('pexpire', value, ttl)
      redis.call('pexpire', permits, ttl)
    else
      for _, key in ipairs({value, permits}) do
        local left = redis.call('pttl', key)
        if left > 0 and left < floor then
          redis.call('pexpire', key, rate_ms(floor))
        end
      end
    end
  end
end
