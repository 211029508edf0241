-- @keys exp event source pending
-- @argv now form doc windows value member ttl action tail
-- (declared in service/store/scripts.py)
-- An outcome event reported with POST /outcomes, attributed and recorded once
-- (service.outcomes.attribution): one call per candidate experiment.
-- KEYS: exp, the event (rd:{e}:oe:<digest>), the source (the user's touches, or the
--   impression's attribution entry), pending
-- ARGV: now, form ('u': by user, 'i': by impression), document id, the action's metrics
--   "name:window_s,...", value ('' none), pending member, the event's TTL, action, the
--   impression id's prefix ('u') or the impression id ('i')
-- -> {'ok', impression, "metric,...", position} recorded (pending, due at once) |
--    {'duplicate', impression, "metric,..."} (the event_id was recorded before: nothing) |
--    {'unattributed', reason} | {'window', age in seconds} | {'gone'} (no experiment)
if redis.call('EXISTS', KEYS[1]) == 0 then return {'gone'} end
if redis.call('EXISTS', KEYS[2]) == 1 then
  local was = redis.call('HMGET', KEYS[2], 'i', 'm')
  return {'duplicate', was[1] or '', was[2] or ''}
end
local imp, pos, at
if ARGV[2] == 'u' then
  local touch = redis.call('HGET', KEYS[3], ARGV[3])
  if not touch then return {'unattributed', 'no_impression'} end
  local tail, p, t = string.match(touch, '^([^|]*)|(%d+)|(.*)$')
  imp, pos, at = ARGV[9] .. tail, tonumber(p), tonumber(t)
else
  local raw = redis.call('GET', KEYS[3])
  if not raw then return {'unattributed', 'impression_expired'} end
  local entry = cjson.decode(raw)
  for n, doc in ipairs(entry[5]) do
    if tostring(doc) == ARGV[3] then pos = n - 1 break end
  end
  if not pos then return {'unattributed', 'not_shown'} end
  imp, at = ARGV[9], tonumber(entry[1])
end
local age = tonumber(ARGV[1]) - at
local within = {}
for name, w in string.gmatch(ARGV[4], '([^:,]+):(%d+)') do
  if age <= tonumber(w) then within[#within + 1] = name end
end
if #within == 0 then return {'window', tostring(age)} end
local m = table.concat(within, ',')
redis.call('HSET', KEYS[2], 'a', ARGV[8], 'm', m, 'i', imp, 'p', pos, 'v', ARGV[5],
           'at', ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[7])
redis.call('ZADD', KEYS[4], 0, ARGV[6])
return {'ok', imp, m, tostring(pos)}
