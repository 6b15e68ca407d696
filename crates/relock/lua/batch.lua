-- batch: several plain acquires and releases in one call, each exactly as acquire.lua or
-- release.lua would run it, one after the other. The client coalesces the operations that are
-- waiting for a connection (see batch.rs), so under load one round trip and one script call
-- serve many locks; an operation's error (WRONGTYPE, READONLY) is its own.
--
-- KEYS[1]..  each operation's keys in turn: an acquire's lock and counter (2), a release's
--            lock (1)
-- ARGV[1]    "a" (acquire) or "r" (release) for the first operation, then its arguments as
--            acquire.lua (lease, field, counter TTL) or release.lua (field, mode, publish
--            command, channel) takes them; then the next operation's letter, and so on
--
-- Returns one array per operation: {"ok", reply...} with acquire.lua's reply ({1, token} or
-- {0, pttl}) or release.lua's (1, 0, or -1 for its nil), or {"err", message}.
local out = {}
local k, a = 1, 1
while a <= #ARGV do
  local op = ARGV[a]
  local ok, r
  if op == 'a' then
    ok, r = pcall(acquire, KEYS[k], KEYS[k + 1], tonumber(ARGV[a + 1]), ARGV[a + 2], tonumber(ARGV[a + 3]))
    if ok then
      r = {'ok', r[1], r[2]}
    end
    k, a = k + 2, a + 4
  else
    ok, r = pcall(release, KEYS[k], ARGV[a + 4], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3])
    if ok then
      r = {'ok', r or -1}
    end
    k, a = k + 1, a + 5
  end
  if not ok then
    r = {'err', type(r) == 'table' and r.err or tostring(r)}
  end
  out[#out + 1] = r
end
return out
