-- settle: brings a hold that a handoff granted to its own watchdog lease. A handoff gives the
-- head of the line a first lease of the heartbeat deadline (the releasing client cannot know
-- the head's own lease); where the head's watchdog lease is shorter, a renewal (which never
-- shortens) would leave the longer one, and a holder that crashed would keep the lock that
-- long. The hold is exclusive, so setting its lease, shorter or not, changes only its own
-- standing.
--
-- KEYS     the keys whose TTL is the hold's lease (the lock hash first)
-- ARGV[1]  the watchdog lease in ms
-- ARGV[2]  the hold's field, <client_id>:<n>
--
-- Returns 1 (every key's TTL is now ARGV[1]) or 0 (the hold is not here: nothing changed).
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return 0
end
for i = 1, #KEYS do
  redis.call('pexpire', KEYS[i], ARGV[1])
end
return 1
