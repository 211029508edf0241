-- @keys imp users moments counters
-- @argv
-- (declared in service/store/scripts.py)
-- KEYS: imp, users, moments, counters; ARGV: (none)
-- -> 1 the search counted clicked now, 0 it already was, -1 unknown or expired
-- A click on an A/B search: the first click report of the impression (HSETNX on its
-- own hash, in this script) moves its user's counts from (s, c) to (s, c + 1) and the
-- arm's moments with them; any later report of the same impression changes nothing.
-- include: ab_moments
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HSETNX', KEYS[1], 'ab_clicked', '1') == 0 then return 0 end
local arm = redis.call('HGET', KEYS[1], 'ab_arm')
local user = redis.call('HGET', KEYS[1], 'ab_user')
local s = tonumber(redis.call('HGET', KEYS[2], arm .. ':' .. user .. ':s') or '0')
if s < 1 then return 0 end  -- its user's counts are gone (cannot happen while it lives)
local c = tonumber(redis.call('HINCRBY', KEYS[2], arm .. ':' .. user .. ':c', 1)) - 1
if c >= s then  -- never more clicked searches than searches
  redis.call('HINCRBY', KEYS[2], arm .. ':' .. user .. ':c', -1)
  return 0
end
ab_move(KEYS[3], arm, s, c, s, c + 1)
redis.call('HINCRBY', KEYS[3], arm .. ':clicked:n', 1)  -- the arm's clicked searches
redis.call('HINCRBY', KEYS[4], 'ab_clicked', 1)
return 1
