-- @keys seen seen_before legacy users searches
-- @argv searches ttl | user
-- (declared in service/store/scripts.py)
-- KEYS: seen (SET of the users of the current generation), seen before (the previous
-- generation's SET), legacy (the SET before generations), users (HASH "<version>|<arm>"
-- -> users first seen there), searches (HASH "<version>|<arm>" -> searches); ARGV: a JSON
-- object "<version>|<arm>" -> searches, the current set's TTL (seconds), then
-- "<version>|<arm>|<user>" for each user seen -> the users seen for the first time
-- A user counts once, in the period and arm of the search that first saw them (the
-- users of rollout.srm.Period: "first seen in it"), as long as they come back within a
-- generation (service.store.retention); the SADD that finds them new and the count are
-- one script, so two API processes that see one user at once count them once.
for key, n in pairs(cjson.decode(ARGV[1])) do
  redis.call('HINCRBY', KEYS[5], key, n)
end
local new = 0
for i = 3, #ARGV do
  local version, arm, user = string.match(ARGV[i], '^([^|]+)|(.+)|([^|]+)$')
  local known = redis.call('SISMEMBER', KEYS[2], user) == 1
      or redis.call('SISMEMBER', KEYS[3], user) == 1
  if redis.call('SADD', KEYS[1], user) == 1 and not known then
    redis.call('HINCRBY', KEYS[4], version .. '|' .. arm, 1)
    new = new + 1
  end
end
if #ARGV > 2 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
  if redis.call('TTL', KEYS[3]) == -1 then  -- the layout before generations: it expires too
    redis.call('EXPIRE', KEYS[3], ARGV[2])
  end
end
return new
