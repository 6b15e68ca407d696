-- rate_delete: delete the limiter, its config and the state of both types (Redisson's
-- delete), whatever the keys hold.
--
-- KEYS[1]  the config hash `name`; KEYS[2..5] the value and records keys (lib/rate.lua)
-- ARGV[1]  unused
--
-- Returns the number of keys deleted (0: there was no limiter).
return redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
