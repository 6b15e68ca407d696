-- The rate limiter's shared functions (rate_*.lua): Redisson's RRateLimiter layout.
-- KEYS are always the five of Redisson's scripts, in its order, then relock's sixth:
--   [1] the config hash `name`: rate, interval (ms), type (0 overall, 1 per client),
--       keepAliveTime (ms, 0: none)
--   [2] `{name}:value`, [3] `{name}:value:<client id>`: the permits left (a string integer)
--   [4] `{name}:permits`, [5] `{name}:permits:<client id>`: the permit records, a sorted set
--       scored by the ms the permits were taken at; a member is Redisson's
--       struct.pack('Bc0I', #id, id, permits): a length byte, a 16-byte random id and the
--       permit count as 4 bytes.
--   [6] `{name}:rate:<client id>` (relock's own): the rate this client's value [3] was last
--       written under. Another client's set changes the rate without touching this client's
--       state; the value is recomputed from its records only when the rate differs.

-- The server's clock in ms. (Redisson sends its client's clock instead: see docs/data-layout.md.)
local function rate_now()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- Whether `s` is an integer as Redisson and relock write them: digits, an optional minus
-- sign, within 64 bits (not "nan", "inf", "0x10" or "1e3", which Lua's tonumber also reads).
local function rate_integer(s)
  if type(s) ~= 'string' or not string.find(s, '^%-?%d+$') then
    return false
  end
  local v = tonumber(s)
  return v ~= nil and v > -9.2e18 and v < 9.2e18
end

-- Whether a member of a records key is a record: a length byte, that many bytes of id, and
-- the 4-byte permit count (struct.pack('Bc0I', ...)).
local function rate_record(v)
  return #v >= 5 and string.byte(v, 1) + 5 == #v
end

-- The permits of a list of records, or nil when one of them is not a record.
local function rate_sum(records)
  local sum = 0
  for _, v in ipairs(records) do
    if not rate_record(v) then
      return nil
    end
    local _, permits = struct.unpack('Bc0I', v)
    sum = sum + permits
  end
  return sum
end

-- The index of the first key that holds something the limiter never keeps there, or nil, the
-- config's four fields (nil when it has no config) and the checked keys' types by name
-- ('none' for a missing key): the config a hash of Redisson's four fields only (integers, a
-- type of 0 or 1), a value (and relock's rate key) a string holding an integer, the records a
-- sorted set. With `used_only`,
-- only the state keys of the config's type are checked (a call that touches no other: an
-- acquire, a release, a read), and the records' members are left to the calls that read them
-- (rate_current, a release: each checks what it read before it writes); else all six are
-- checked, every record's member too (a set or a delete). Checked before anything is written,
-- so a refused call leaves every key as it was.
local function rate_foreign_key(keys, used_only)
  local want = {'hash', 'string', 'string', 'zset', 'zset', 'string'}
  local types = {}
  local function fits(i)
    local found = redis.call('type', keys[i])['ok']
    types[keys[i]] = found
    if found == 'none' then
      return true
    end
    if found ~= want[i] then
      return false
    end
    if found == 'string' then
      return rate_integer(redis.call('get', keys[i]))
    end
    if found == 'zset' and not used_only then
      return rate_sum(redis.call('zrange', keys[i], 0, -1)) ~= nil
    end
    return true
  end
  if not fits(1) then
    return 1
  end
  local fields = nil
  if types[keys[1]] == 'hash' then
    fields = redis.call('hmget', keys[1], 'rate', 'interval', 'type', 'keepAliveTime')
    local known = 0
    for _, v in ipairs(fields) do
      if v then
        known = known + 1
      end
    end
    if redis.call('hlen', keys[1]) ~= known then
      return 1
    end
    -- Values a limiter never writes (Redisson writes integers and a type of 0 or 1): refused
    -- before anything is written, not a Lua error after a grant.
    -- A rate and an interval of at least 1, a keep-alive of at least 0.
    for i, least in pairs({[1] = 1, [2] = 1, [4] = 0}) do
      local v = fields[i]
      if v and not (rate_integer(v) and tonumber(v) >= least) then
        return 1
      end
    end
    if fields[3] and fields[3] ~= '0' and fields[3] ~= '1' then
      return 1
    end
  end
  local state = {2, 3, 4, 5, 6}
  if used_only then
    if not fields or not fields[3] then
      state = {}
    elseif fields[3] == '1' then
      state = {3, 5, 6}
    else
      state = {2, 4}
    end
  end
  -- Only the limiter's own six: a script's further keys (a request key) are its own.
  for _, i in ipairs(state) do
    if i <= #keys and not fits(i) then
      return i
    end
  end
  return nil, fields, types
end

-- The config of rate_foreign_key's fields: rate, interval (ms), type ('0' or '1') and
-- keep-alive (ms, 0: none); nil when the limiter has none (Redisson: "RateLimiter is not
-- initialized").
local function rate_config(fields)
  if not fields or not fields[1] or not fields[2] or not fields[3] then
    return nil
  end
  return tonumber(fields[1]), tonumber(fields[2]), fields[3], tonumber(fields[4] or '0') or 0
end

-- The value and records keys of the config's type (the shared ones, or this client's), and
-- the key of the rate this client's value was written under (nil for the shared state: it is
-- Redisson's too, and Redisson keeps no such key).
local function rate_state(keys, kind)
  if kind == '1' then
    return keys[3], keys[5], keys[6]
  end
  return keys[2], keys[4], nil
end

-- A ms time as an integer string (a Lua number prints as 1.7e+12 past 14 digits).
local function rate_ms(ms)
  return string.format('%.0f', ms)
end

-- The permits left now, the stored value (a number, or nil) and whether this client's rate
-- key is stale (not the rate): the stored value plus the permits of records taken
-- `interval` or more ago. With no records key at all (`types` from rate_foreign_key), nothing
-- counts in the window: the whole rate, whatever value is left. Recomputed as the rate less
-- the permits of the records still counting (Redisson's updateRate computation, without its
-- cut at 0: a negative value is the permits the window holds past a lowered rate)
-- when the value was written under another rate (this client's, by its rate key; the shared
-- one, when it is above the rate) or is missing while records are left: reading every record
-- costs time in their number, so only then. With `write`, expired records are removed; the
-- caller writes what it settles on (rate_store). nil when a member read is not a record
-- (something the limiter never keeps there): then nothing was written.
local function rate_current(value_key, permits_key, rate_key, rate, now, interval, types, write)
  local stored = redis.call('get', value_key)
  local stale = rate_key ~= nil and tonumber(redis.call('get', rate_key) or '-1') ~= rate
  stored = tonumber(stored)
  if types[permits_key] == 'none' then
    return rate, stored, stale
  end
  local horizon = rate_ms(now - interval)
  local expired = redis.call('zrangebyscore', permits_key, 0, horizon)
  local given_back = rate_sum(expired)
  if given_back == nil then
    return nil
  end
  local value = nil
  if stored ~= nil and not stale then
    value = stored + given_back
  elseif stored == nil and rate_key == nil then
    -- Redisson's: a shared state without a value starts from the whole rate.
    value = rate
  end
  if value == nil or value > rate then
    local in_use = rate_sum(redis.call('zrangebyscore', permits_key, '(' .. horizon, '+inf'))
    if in_use == nil then
      return nil
    end
    -- Below 0 when the records in the window hold more than a lowered rate: the deficit is
    -- kept, so that records expiring and releases pay it off before anything is granted.
    value = rate - in_use
  end
  -- Only once every member read is known to be a record.
  if write and #expired > 0 then
    redis.call('zremrangebyscore', permits_key, 0, horizon)
  end
  return value, stored, stale
end

-- The index of the records key of the config's type (for a {-3, i} refusal).
local function rate_records_index(kind)
  if kind == '1' then
    return 5
  end
  return 4
end

-- Writes the value a call settled on when it differs from the stored one, and for this
-- client's state the rate it is under when that is stale: nothing unchanged is written (each
-- write is replicated and logged). KEEPTTL: the state keys keep (or lack) a TTL together, as
-- the keep-alive gives it; a plain SET would strip the value's and leave the records to
-- expire alone.
local function rate_store(value_key, rate_key, value, stored, rate, stale)
  if value ~= stored then
    redis.call('set', value_key, value, 'keepttl')
  end
  if rate_key and stale then
    redis.call('set', rate_key, rate, 'keepttl')
  end
end

-- Redisson's keep-alive (`keep` ms, 0: none): with one, the config and the state live at least
-- that long from this call, or at least `least` ms when that is longer (a refused acquire's
-- waiter sleeps its delay and must not wake to keys that expired meanwhile); without, the
-- state lives as long as the config when that has a TTL. Either way a state key that has a
-- TTL lives at least `interval` ms from this call (and `least`), never shortened: a record
-- counts for an interval after its grant, and keys another client's set left with an old TTL
-- (it starts only its own state afresh) must not expire inside that window. The state keys
-- that get a TTL all get the longest any of them has, so that they expire together.
local function rate_keep_alive(config, state, keep, interval, least)
  local floor = math.max(interval, least or 0)
  local left = {}
  for i, key in ipairs(state) do
    left[i] = redis.call('pttl', key)
  end
  -- Whether a state key without a TTL gets one.
  local all = true
  if keep > 0 then
    local ttl = math.max(keep, least or 0)
    if redis.call('pttl', config) < ttl then
      redis.call('pexpire', config, rate_ms(ttl))
    end
    floor = math.max(floor, keep)
  else
    local ttl = redis.call('pttl', config)
    if ttl > 0 then
      floor = math.max(floor, ttl)
    else
      -- No TTL but on keys an earlier keep-alive left: they keep one, at least the floor, and
      -- so does a state key created since (a records key a grant made again), so that the
      -- state keys expire together.
      all = false
      for i = 1, #state do
        if left[i] > 0 then
          all = true
        end
      end
    end
  end
  -- To the longest TTL any of them has: they expire together (never one alone: Redisson's
  -- acquire fails on a value below n with no records key).
  for i = 1, #state do
    floor = math.max(floor, left[i])
  end
  for i, key in ipairs(state) do
    if left[i] ~= -2 and left[i] < floor and (all or left[i] > 0) then
      redis.call('pexpire', key, rate_ms(floor))
    end
  end
end
