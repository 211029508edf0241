-- The metrics' credit script: outcome events (service.credit.outcome_events) added to
-- their metrics' W exactly once, each with its credited mark, as credit.lua does for
-- impressions (the event's 'credited' field, its mark in the event log). No guard and no
-- hold: a metric's W feeds no policy.
-- include: outcome_write
-- @keys exp metrics pending events counters | event
-- @argv | member mark spec
-- (declared in service/store/scripts.py, METRIC_CREDIT: each argument's encoding there)
-- KEYS: then one per event: its key
-- ARGV per event: its pending member, its mark (JSON), "seg|m,i,j,s;...|m:arm:value;...|counter,..."
-- -> {'missing'} (no experiment) | {'ok', code per event: ok, already or missing}
-- Each metric's outcomes are added by outcome_write.lua, in total and per segment label
-- (the fields of service.store.keys.METRIC_FIELDS); each sum is kept as the shortest
-- text that reads back as the same double (%.17g), so the counts are the float sums of
-- the outcomes in the order the script applied them.
if redis.call('EXISTS', KEYS[1]) == 0 then return {'missing'} end
local M = KEYS[2]
local function add(field, x)
  local v = tonumber(redis.call('HGET', M, field) or '0') + x
  redis.call('HSET', M, field, string.format('%.17g', v))
end
local counts, codes = {}, {}
for k = 0, #KEYS - 6 do
  local ev = KEYS[6 + k]
  local id, mark, spec = ARGV[1 + 3 * k], ARGV[2 + 3 * k], ARGV[3 + 3 * k]
  local code
  if redis.call('EXISTS', ev) == 0 then
    code = 'missing'
  elseif redis.call('HEXISTS', ev, 'credited') == 1 then
    code = 'already'
  else
    local seg, outs, vals, counted = string.match(spec, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    local by_metric, metrics = {}, {}
    for m, si, sj, ss in string.gmatch(outs, '([^,;]+),(%d+),(%d+),([^,;]+)') do
      if not by_metric[m] then
        by_metric[m] = {}
        metrics[#metrics + 1] = m
      end
      local o = by_metric[m]
      o[#o + 1] = {tonumber(si), tonumber(sj), tonumber(ss)}
    end
    for _, m in ipairs(metrics) do
      local writes, ties = outcome_writes(by_metric[m])
      outcome_count(M, metric_fields(m), writes, ties, true)
      for label in string.gmatch(seg, '[^,]+') do
        outcome_count(M, metric_fields(m, label), writes, ties, true)
      end
    end
    for m, arm, v in string.gmatch(vals, '([^:;]+):(%d+):([^;]+)') do
      add(METRIC_F.values .. m .. ':' .. arm, tonumber(v))
      redis.call('HINCRBY', M, METRIC_F.events .. m .. ':' .. arm, 1)
    end
    redis.call('HSET', ev, 'credited', '1')  -- the mark itself goes to the event log
    redis.call('XADD', KEYS[4], '*', 'type', 'metric', 'id', id, 'mark', mark, 'seg', seg)
    for name in string.gmatch(counted, '[^,]+') do counts[name] = (counts[name] or 0) + 1 end
    code = 'ok'
  end
  redis.call('ZREM', KEYS[3], id)
  codes[#codes + 1] = code
end
for name, n in pairs(counts) do redis.call('HINCRBY', KEYS[5], name, n) end
return {'ok', unpack(codes)}
