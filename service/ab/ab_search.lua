-- @keys imp users moments counters exp [attribution touches]
-- @argv fields ttl arm user counters conversions attribution_ttl [entry touches]
-- (declared in service/store/scripts.py)
-- KEYS: imp, users, moments, counters, exp; with an attribution TTL also 6 the
-- impression's attribution entry and 7 the user's last touches
-- ARGV: the impression's field/value pairs (a JSON array of strings), ttl, arm, user,
-- counters (a JSON object name -> n), the conversion metrics' names ("name,..."; ''
-- none), the attribution TTL (0: none, nothing more is written), the attribution entry
-- (JSON), the touches' field/value pairs (a JSON array of strings: document ->
-- "tail|position|time|arm"; last touch wins)
-- -> 1 stored, 0 already there (a retried call), -1 the experiment is gone
-- One search of one user in one arm of an A/B experiment: the user's counts go from
-- (s, c) to (s + 1, c), and each metric's moments of the arm take the increments that
-- replace the user's old value by the new one (rollout.ab.moments.increments: n counts
-- the user once, on their first search). On that first search the user also enters
-- every conversion metric's moments with the value 0 (rollout.ab.conversions: a user
-- who never converts counts as a 0); ab_outcome.lua moves the value afterwards.
-- include: ab_moments
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[5]) == 0 then return -1 end
redis.call('HSET', KEYS[1], unpack(cjson.decode(ARGV[1])))
redis.call('EXPIRE', KEYS[1], ARGV[2])
local arm, user = ARGV[3], ARGV[4]
local s = tonumber(redis.call('HINCRBY', KEYS[2], arm .. ':' .. user .. ':s', 1)) - 1
local c = tonumber(redis.call('HGET', KEYS[2], arm .. ':' .. user .. ':c') or '0')
ab_move(KEYS[3], arm, s, c, s + 1, c)
if s == 0 and ARGV[6] and ARGV[6] ~= '' then
  for name in string.gmatch(ARGV[6], '[^,]+') do
    ab_bump(KEYS[3], arm, name, nil, 0)
  end
end
for name, n in pairs(cjson.decode(ARGV[5])) do
  redis.call('HINCRBY', KEYS[4], name, n)
end
if ARGV[7] and tonumber(ARGV[7]) > 0 then
  redis.call('SET', KEYS[6], ARGV[8], 'EX', ARGV[7])
  redis.call('HSET', KEYS[7], unpack(cjson.decode(ARGV[9])))
  redis.call('EXPIRE', KEYS[7], ARGV[7])
end
return 1
