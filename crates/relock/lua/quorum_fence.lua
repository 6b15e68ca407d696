-- quorum_fence: a quorum lock's token write-back on one node.
--
-- KEYS[1]  the fencing counter, redisson_lock_token:{name}
-- ARGV[1]  the token the acquisition returned (the largest any granting node minted)
-- ARGV[2]  ms the counter must live at least (lease + grace)
--
-- Returns 1. Afterwards the counter is at least the token, so any later acquisition whose
-- quorum includes this node mints a larger one.
fence(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]))
return 1
