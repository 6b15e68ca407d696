-- quorum_release: release.lua on one node of a quorum lock, which also raises the node's
-- fencing counter to the released hold's token, in the same script. A later grant on this
-- node needs the hold's field gone first, so it always mints above the hold's token, whatever
-- became of the acquisition's write-back (a NOSCRIPT resend, a slow task): found by q101,
-- where a write-back that landed after the release let the next holder mint the same token.
--
-- KEYS[1]  the lock hash
-- KEYS[2]  the fencing counter, redisson_lock_token:{name}
-- ARGV[1]  the hold's field
-- ARGV[2]  "1": drop one count; "all": drop the hold whatever its count
-- ARGV[3]  the publish command ("publish": a quorum's nodes are single servers)
-- ARGV[4]  the release channel (an argument, not a key: see release.lua)
-- ARGV[5]  the hold's token; "0" for the clean-up of an attempt that got no token (no raise)
-- ARGV[6]  ms the counter lives once raised (the grace)
--
-- Returns as release.lua: 1 (released), 0 (counts are left) or nil (the hold is not here).
local released = release(KEYS[1], ARGV[4], ARGV[1], ARGV[2], ARGV[3])
local token = tonumber(ARGV[5])
if token > 0 then
  fence(KEYS[2], token, tonumber(ARGV[6]))
end
return released
