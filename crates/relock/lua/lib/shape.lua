-- What a lock's hash must look like before any script deletes, renews, joins or waits on it,
-- so that a data key that shares a lock's name (`HSET orders:99 status paid`) is never taken
-- for a held lock (docs/safety.md, "Keys that are not locks").
--
-- The rule is what every lock hash has, whoever wrote it (Java's Redisson, its ports such as
-- node-redisson, relock): a time to live; at most a few fields (one holder, or some readers);
-- every field an owner in one of the forms those libraries write, mapped to a positive hold
-- count: `<id>:<number>` (Java: `<uuid>:<thread id>`, relock: `<client id>:<n>`) or
-- `<uuid>:<uuid>` (node-redisson), either followed by `:write` for a write hold; and, for a
-- read-write lock only, `mode` (`read` or `write`). A data hash whose fields merely contain a
-- colon (`sku:AB-7` → 2, `https://example.com/` → 17) is not a lock.

local SHAPE_UUID = '%x%x%x%x%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x'

-- Whether `f` is an owner field of Redisson, one of its ports, or relock.
local function shape_owner(f)
  local o = string.match(f, '^(.+):write$') or f
  return string.match(o, '.:%-?%d+$') ~= nil
    or string.match(o, '^' .. SHAPE_UUID .. ':' .. SHAPE_UUID .. '$') ~= nil
end

-- A field as an error message may show it: printable ASCII other than space and backquote
-- kept, every other byte shown as `?`, cut to 40 bytes. Never a value (it may be a secret),
-- never bytes that are not UTF-8 (the reply must decode), never a space (so that no field can
-- read as another error code).
local function shape_short(s)
  local cut = string.sub(s, 1, 40)
  cut = string.gsub(cut, '[^%w%p]', '?')
  cut = string.gsub(cut, '`', '?')
  if #s > 40 then
    cut = cut .. '...'
  end
  return cut
end

-- The most fields a lock hash is read in full for: a lock has one holder, or a few readers
-- (each reader's field, and `mode`). A larger hash is refused as not a lock, rather than
-- sampled, so that no field of it goes unseen.
local SHAPE_MAX_FIELDS = 1000

-- The fields a first read asks for: every lock but a read-write lock with many readers has
-- fewer, so one read gives them all; a hash with this many or more is counted, then read whole.
local SHAPE_FEW_FIELDS = 16

-- nil if `key` is missing or a lock hash, with what was read of it: its PTTL (-2: missing) and
-- its fields and values (flat, as HGETALL gives them; empty when missing), so that a caller
-- reads neither again. Else what was found, in words. A key of another type than a hash fails
-- with WRONGTYPE (HLEN or HRANDFIELD), as before this check existed.
--
-- PTTL first: a missing key is a free lock, and a hash without a time to live is never a
-- lock's, so neither has its values read. Then one HRANDFIELD with a positive count, which
-- returns the whole hash when it has fewer fields than the count: a lock's fields and values in
-- one read. A hash that may have more is counted (HLEN) before it is read whole, so a data
-- hash of more than SHAPE_MAX_FIELDS fields is refused having had at most SHAPE_FEW_FIELDS of
-- its values read.
local function not_a_lock(key)
  local pttl = redis.call('pttl', key)
  if pttl == -2 then
    return nil, -2, {}
  end
  local all = nil
  if pttl ~= -1 then
    all = redis.call('hrandfield', key, SHAPE_FEW_FIELDS, 'withvalues')
  end
  if all == nil or #all >= 2 * SHAPE_FEW_FIELDS then
    local n = redis.call('hlen', key)
    if n > SHAPE_MAX_FIELDS then
      return 'a hash of ' .. n .. ' fields (a lock has one holder, or at most ' ..
        (SHAPE_MAX_FIELDS - 1) .. ' readers)'
    end
    if pttl == -1 then
      return 'a hash without a time to live'
    end
    all = redis.call('hgetall', key)
  end
  local owners = 0
  for i = 1, #all, 2 do
    local f, v = all[i], all[i + 1]
    if f == 'mode' then
      if v ~= 'read' and v ~= 'write' then
        return 'a hash whose field `mode` is neither read nor write'
      end
    elseif not shape_owner(f) then
      return 'a hash with field `' .. shape_short(f) .. '`, which is not a lock owner\'s (<id>:<n> or <uuid>:<uuid>)'
    elseif not string.match(v, '^[1-9]%d*$') then
      return 'a hash whose field `' .. shape_short(f) .. '` does not hold a positive hold count'
    else
      owners = owners + 1
    end
  end
  if owners == 0 then
    -- A lock's hash goes with its last holder; `mode` alone is data.
    return 'a hash with no lock owner field'
  end
  return nil, pttl, all
end

-- Raises NOTALOCK (the client's `Error::NotALock`) if `key` exists and is not a lock hash;
-- nothing has been written when it does, since every caller checks before its first write.
-- Returns the lock's PTTL (-2: missing) and its fields and values, as `not_a_lock` read them.
local function ensure_lock(key)
  local found, pttl, all = not_a_lock(key)
  if found then
    error({err = 'NOTALOCK ' .. found})
  end
  return pttl, all
end
