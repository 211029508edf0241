-- @keys exp event source users moments counters
-- @argv now form doc windows value ttl action tail user
-- (declared in service/store/scripts.py)
-- An outcome event of an A/B experiment (POST /outcomes, service.outcomes.attribution):
-- attributed by last touch, counted once, and the user's conversion values and the
-- arm's moments moved in this script (no worker: an A/B test credits nothing later).
-- KEYS: exp, the event (rd:{e}:oe:<digest>), the source (the user's touches, or the
--   impression's attribution entry), users, moments, counters
-- ARGV: now, form ('u': by user, 'i': by impression), document id, the action's metrics
--   "name:window_s:kind,..." (kind count or sum), value ('' none), the event's TTL,
--   action, the impression id's prefix ('u') or the impression id ('i'), the user's
--   keyed hash ('u'; '' by impression: the entry names the user)
-- -> the replies of outcome.lua: {'ok', impression, "metric,...", position} counted |
--    {'duplicate', impression, "metric,..."} (the event_id was recorded before: nothing) |
--    {'unattributed', reason} | {'window', age in seconds} | {'gone'} (no experiment)
-- The touch (ab_search.lua) carries the arm that served the search, so the event moves
-- the user where their search was counted. Each metric within its window goes from the
-- user's old value v to v + 1 (count) or v + value (sum), and the arm's moments take
-- the increments (0, new - old, new² - old²): n counted the user, with value 0, on
-- their first search (rollout.ab.conversions).
-- include: ab_moments
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if redis.call('EXISTS', KEYS[2]) == 1 then
  local was = redis.call('HMGET', KEYS[2], 'i', 'm')
  return {'duplicate', was[1] or '', was[2] or ''}
end
local imp, pos, at, arm, user
if ARGV[2] == 'u' then
  local touch = redis.call('HGET', KEYS[3], ARGV[3])
  if not touch then return {'unattributed', 'no_impression'} end
  local tail, p, t, a = string.match(touch, '^([^|]*)|(%d+)|([^|]*)|(%d+)$')
  if not a then return {'unattributed', 'no_impression'} end
  imp, pos, at, arm = ARGV[8] .. tail, tonumber(p), tonumber(t), a
  user = ARGV[9]
else
  local raw = redis.call('GET', KEYS[3])
  if not raw then return {'unattributed', 'impression_expired'} end
  local entry = cjson.decode(raw)
  for n, doc in ipairs(entry['shown']) do
    if tostring(doc) == ARGV[3] then pos = n - 1 break end
  end
  if not pos then return {'unattributed', 'not_shown'} end
  imp, at, arm, user = ARGV[8], tonumber(entry['t']), tostring(entry['arm']), entry['u']
end
local age = tonumber(ARGV[1]) - at
local within, kinds = {}, {}
for name, w, kind in string.gmatch(ARGV[4], '([^:,]+):(%d+):(%a+)') do
  if age <= tonumber(w) then
    within[#within + 1] = name
    kinds[#kinds + 1] = kind
  end
end
if #within == 0 then return {'window', tostring(age)} end
if tonumber(redis.call('HGET', KEYS[4], arm .. ':' .. user .. ':s') or '0') < 1 then
  return {'unattributed', 'no_search'}  -- the user's counts are gone (cannot happen)
end
for n, name in ipairs(within) do
  local by = '1'
  if kinds[n] == 'sum' then by = ARGV[5] end
  local f = arm .. ':' .. user .. ':v:' .. name
  local old = tonumber(redis.call('HGET', KEYS[4], f) or '0')
  local new = tonumber(redis.call('HINCRBYFLOAT', KEYS[4], f, by))
  ab_bump(KEYS[5], arm, name, old, new)
end
local m = table.concat(within, ',')
redis.call('HSET', KEYS[2], 'a', ARGV[7], 'm', m, 'i', imp, 'p', pos, 'v', ARGV[5],
           'at', ARGV[1], 'arm', arm)
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('HINCRBY', KEYS[6], 'ab_outcomes', 1)
return {'ok', imp, m, tostring(pos)}
