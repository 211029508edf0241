-- KEYS: imp, users, moments, counters, exp; ARGV: the impression's field/value pairs (a
-- JSON array of strings), ttl, arm, user, counters (a JSON object name -> n)
-- -> 1 stored, 0 already there (a retried call), -1 the experiment is gone
-- One search of one user in one arm of an A/B experiment: the user's counts go from
-- (s, c) to (s + 1, c), and each metric's moments of the arm take the increments that
-- replace the user's old value by the new one (rollout.ab.moments.increments: n counts
-- the user once, on their first search).
-- include: ab_moments
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[5]) == 0 then return -1 end
redis.call('HSET', KEYS[1], unpack(cjson.decode(ARGV[1])))
redis.call('EXPIRE', KEYS[1], ARGV[2])
local arm, user = ARGV[3], ARGV[4]
local s = tonumber(redis.call('HINCRBY', KEYS[2], arm .. ':' .. user .. ':s', 1)) - 1
local c = tonumber(redis.call('HGET', KEYS[2], arm .. ':' .. user .. ':c') or '0')
ab_move(KEYS[3], arm, s, c, s + 1, c)
for name, n in pairs(cjson.decode(ARGV[5])) do
  redis.call('HINCRBY', KEYS[4], name, n)
end
return 1
