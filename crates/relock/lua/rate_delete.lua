-- rate_delete: delete the limiter, its config and the state of both types (Redisson's
-- delete). A name whose keys hold something the limiter never keeps there (another kind's
-- lock, say) is refused, and nothing deleted (Redisson deletes whatever they hold).
--
-- KEYS[1]  the config hash `name`; KEYS[2..6] the state keys (lib/rate.lua)
-- ARGV[1]  unused
--
-- Returns
--   {1, n}   deleted; n the number of keys deleted (0: there was no limiter)
--   {-3, i}  KEYS[i] holds something the limiter never keeps there: nothing deleted
local foreign = rate_foreign_key(KEYS)
if foreign then
  return {-3, foreign}
end
return {1, redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6])}
