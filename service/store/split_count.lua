-- @keys seen users searches
-- @argv searches | user
-- (declared in service/store/scripts.py)
-- KEYS: seen (SET of the placement's users), users (HASH "<version>|<arm>" -> users first
-- seen there), searches (HASH "<version>|<arm>" -> searches); ARGV: a JSON object
-- "<version>|<arm>" -> searches, then "<version>|<arm>|<user>" for each user seen
-- -> the users seen for the first time
-- A user counts once, in the period and arm of the search that first saw them (the
-- users of rollout.srm.Period: "first seen in it"); the SADD that finds them new and
-- the count are one script, so two API processes that see one user at once count them
-- once.
for key, n in pairs(cjson.decode(ARGV[1])) do
  redis.call('HINCRBY', KEYS[3], key, n)
end
local new = 0
for i = 2, #ARGV do
  local version, arm, user = string.match(ARGV[i], '^([^|]+)|(.+)|([^|]+)$')
  if redis.call('SADD', KEYS[1], user) == 1 then
    redis.call('HINCRBY', KEYS[2], version .. '|' .. arm, 1)
    new = new + 1
  end
end
return new
