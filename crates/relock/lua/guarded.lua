-- guarded: runs a batch of the caller's commands on data keys only while one hold is on its
-- lock, in one step of the server (a guarded write; a read hold's guarded read runs the same
-- file flagged no-writes). A hold's field is never reused, so a later grant, even to the same
-- client, fails the check: a holder paused past its lease writes nothing.
--
-- KEYS[1]          the lock hash
-- KEYS[2..1+k]     the hold's other lease keys (a read hold's timeout key), which must exist
-- KEYS[2+k..]      the data keys the commands name (for routing and ACL checks)
-- ARGV[1]          the hold's field, <client_id>:<n>
-- ARGV[2]          k, how many other lease keys
-- ARGV[3]          "1": the hold must exclude every other (a write); "0": any hold (a read)
-- ARGV[4]          how many commands, n
-- ARGV[5..]        each command in turn: its word count c, then its c words (name first)
--
-- Returns {1, reply 1, ..., reply n} (every command ran, in order), {0} (the hold is not
-- here: nothing ran) or {2} (a write under a hold that shares the lock: a read-write lock's
-- reader, or a field that is no holder's; nothing ran). A command that fails stops the batch
-- with its error; the commands before it stay applied (as in MULTI/EXEC, Redis has no
-- rollback).
if ARGV[1] == 'mode' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return {0}
end
-- A read-write lock's hash has `mode`; only its write holds (`…:write`) exclude the others.
if ARGV[3] == '1' and redis.call('hexists', KEYS[1], 'mode') == 1
    and not string.match(ARGV[1], ':write$') then
  return {2}
end
local k = tonumber(ARGV[2])
for i = 2, 1 + k do
  if redis.call('exists', KEYS[i]) == 0 then
    return {0}
  end
end
local out = {1}
local at = 5
for _ = 1, tonumber(ARGV[4]) do
  local c = tonumber(ARGV[at])
  local reply = redis.call(unpack(ARGV, at + 1, at + c))
  -- nil cannot sit in a Lua array; false comes back to the client as a nil reply.
  if reply == nil then
    reply = false
  end
  out[#out + 1] = reply
  at = at + 1 + c
end
return out
