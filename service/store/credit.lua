-- The credit script: step 6 of the protocol (service.credit). Runs after guard.lua.
-- include: guard
-- include: outcome_write
-- @keys exp W counters pending ties segments events | imp clicks
-- @argv sv guard target | id mark spec
-- (declared in service/store/scripts.py, CREDIT: each argument's encoding there)
-- KEYS: then per impression: imp, clicks
--   (each impression credited is appended to the events stream: an outcome event with its
--   mark and segment labels)
--   (an impression's outcomes are added to W and, per label of its 'seg' field, to the
--   segments hash, by outcome_write.lua: service.segments.dimensions, service.store.keys)
-- ARGV: sv, the guard ("" for none; "q", "q:period", "q:period:kl" or
--   "q:period:kl:big:floor": an outcome on a watched pair with d² > q·n, or n·kl(p, ½) > q
--   with kl, is held, and so is the impression whose outcomes make n a multiple of
--   period, and an outcome of a pair watched for its verdict edge (code + 4) whose counts
--   draw it with big and floor: guard.lua), the target ("": the policy's
--   W, counted in the experiment's n, logged as 'outcome' events; "click": the click
--   metric of an experiment whose policy learns from another metric: KEYS W is then the
--   metrics hash, written as metric_credit.lua writes a metric's counts (the fields of
--   service.store.keys.METRIC_FIELDS, metric 'click', per label too), logged as 'metric'
--   events, the policy and its version untouched), then per impression: id,
--   result (JSON mark),
--   "clicks seen|counter,counter...|i,j,s,watched;i,j,s,watched..." (watched: 0 no,
--   1 either side losing, 2 only i losing, 3 only j losing, plus 4 for the verdict edge:
--   service.credit.guard.Guard.watches)
-- -> {'sv', current sv} | {'hold', held id} | {'missing'} |
--    {'ok' | 'held', held id or '', code per impression handled...}
local exp, W = KEYS[1], KEYS[2]
local meta = redis.call('HMGET', exp, 'sv', 'hold', 'K', 'n')
if not meta[1] then return {'missing'} end
if meta[1] ~= ARGV[1] then return {'sv', meta[1]} end
if meta[2] then return {'hold', meta[2]} end
local K = tonumber(meta[3])
local n0 = tonumber(meta[4] or '0')
local sq, sp, sk, sb, sf = string.match(ARGV[2], '^([^:]*):?(%d*):?(%a*):?([^:]*):?([^:]*)$')
local q = tonumber(sq)
local period = tonumber(sp) or 0
local kl = sk == 'kl'
local big, floor = tonumber(sb) or 0, tonumber(sf) or 0
local counts, codes = {}, {}
local updates, applied, held = 0, 0, ''
local clicks_only = ARGV[3] == 'click'
local logged = clicks_only and 'metric' or 'outcome'
-- the click metric's counts are the metrics hash's fields of metric 'click'; the
-- policy's are W (K*K doubles), the ties hash (KEYS[5], field 'min:max') and the
-- segments hash (KEYS[6])
local total = metric_fields('click')
local read = clicks_only and outcome_text_reader(W, total) or outcome_matrix_reader(W, K)
for k = 0, (#KEYS - 7) / 2 - 1 do
  local imp = KEYS[8 + 2 * k]
  local id, mark, spec = ARGV[4 + 3 * k], ARGV[5 + 3 * k], ARGV[6 + 3 * k]
  local nreports, counted, outcomes = string.match(spec, '^(%d+)|([^|]*)|(.*)$')
  local code
  if redis.call('EXISTS', imp) == 0 then
    code = 'missing'
  elseif redis.call('HEXISTS', imp, 'credited') == 1 then
    code = 'already'
  elseif tonumber(redis.call('HGET', imp, 'reports') or '0') ~= tonumber(nreports) then
    code = 'changed'
  else
    -- W's cells as this impression's outcomes leave them (outcome_write.lua)
    local outs = {}
    for si, sj, ss, sw in string.gmatch(outcomes, '(%d+),(%d+),([^,;]+),(%d)') do
      outs[#outs + 1] = {tonumber(si), tonumber(sj), tonumber(ss), tonumber(sw)}
    end
    local cells, steps, ties, writes = outcome_cells(outs, read, q ~= nil)
    local trip = false
    if q then
      for _, st in ipairs(steps) do
        if st[3][4] ~= 0 and guard_trips(q, kl, st[3][4], st[1], st[2], big, floor) then
          trip = true
        end
      end
    end
    if #outs > 0 and guard_periodic(period, n0 + updates + 1) then trip = true end
    if trip then
      held = id
      break
    end
    local seg = redis.call('HGET', imp, 'seg')
    if clicks_only then
      outcome_put(W, nil, total, cells, W, total.ties, ties)
    else
      outcome_put(W, K, nil, cells, KEYS[5], '', ties)
    end
    if #outs > 0 then
      updates = updates + 1
      for label in string.gmatch(seg or '', '[^,]+') do
        if clicks_only then outcome_count(W, metric_fields('click', label), writes, ties, true)
        else outcome_count(KEYS[6], segment_fields(label), writes, ties, false) end
      end
    end
    redis.call('HSET', imp, 'closed', '1', 'credited', mark)
    redis.call('XADD', KEYS[7], '*', 'type', logged, 'id', id, 'mark', mark, 'seg', seg or '')
    for name in string.gmatch(counted, '[^,]+') do counts[name] = (counts[name] or 0) + 1 end
    applied = applied + 1
    code = 'ok'
  end
  if code ~= 'changed' then redis.call('ZREM', KEYS[4], id) end
  codes[#codes + 1] = code
end
for name, n in pairs(counts) do redis.call('HINCRBY', KEYS[3], name, n) end
if clicks_only then
  if updates > 0 then redis.call('HINCRBY', W, total.n, updates) end
else
  if updates > 0 then redis.call('HINCRBY', exp, 'n', updates) end
  if applied > 0 then redis.call('HINCRBY', exp, 'version', 1) end
end
if held ~= '' then
  redis.call('HSET', exp, 'hold', held)
  return {'held', held, unpack(codes)}
end
return {'ok', '', unpack(codes)}
