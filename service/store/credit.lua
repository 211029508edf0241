-- The credit script: step 6 of the protocol (service.credit). Runs after guard.lua.
-- include: guard
-- KEYS: exp, W, counters, pending, ties, segments, events, then per impression: imp, clicks
--   (each impression credited is appended to the events stream: an outcome event with its
--   mark and segment labels)
--   (an impression's outcomes are added to W and, per label of its 'seg' field, to the
--   segments hash: service.segments.dimensions, service.store.keys)
-- ARGV: sv, the guard ("" for none; "q", "q:period" or "q:period:kl": an outcome on a
--   watched pair with d² > q·n, or n·kl(p, ½) > q with kl, is held, and so is the
--   impression whose outcomes make n a multiple of period), the target ("": the policy's
--   W, counted in the experiment's n, logged as 'outcome' events; "click": the click
--   metric of an experiment whose policy learns from another metric: KEYS W is then the
--   metrics hash, written as metric_credit.lua writes a metric's counts (w:click:i:j,
--   t:click:i:j, n:click, s:click:<label>:i:j, sn:click:<label>), logged as 'metric'
--   events, the policy and its version untouched), then per impression: id,
--   result (JSON mark),
--   "clicks seen|counter,counter...|i,j,s,watched;i,j,s,watched..." (watched: 0 no,
--   1 either side losing, 2 only i losing, 3 only j losing: service.credit.guard.Guard.watches)
-- -> {'sv', current sv} | {'hold', held id} | {'missing'} |
--    {'ok' | 'held', held id or '', code per impression handled...}
local exp, W = KEYS[1], KEYS[2]
-- an impression's outcomes (its writes) added per label "dim=value" of its seg field.
-- The rule (s to W[i][j], 1 - s to W[j][i], none for i == j, a tie counted by pair) is
-- bandits/outcomes.py's; bandits/outcome_cases.json checks this script against it.
local function add_segments(key, seg, writes)
  for label in string.gmatch(seg, '[^,]+') do
    redis.call('HINCRBY', key, 'n:' .. label, 1)
    for _, w in ipairs(writes) do
      if w[8] ~= 0 then redis.call('HINCRBYFLOAT', key, 'w:' .. label .. ':' .. w[6], w[8]) end
      if w[8] ~= 1 then redis.call('HINCRBYFLOAT', key, 'w:' .. label .. ':' .. w[7], 1 - w[8]) end
      if w[5] then redis.call('HINCRBY', key, 't:' .. label .. ':' .. w[5], 1) end
    end
  end
end
local meta = redis.call('HMGET', exp, 'sv', 'hold', 'K', 'n')
if not meta[1] then return {'missing'} end
if meta[1] ~= ARGV[1] then return {'sv', meta[1]} end
if meta[2] then return {'hold', meta[2]} end
local K = tonumber(meta[3])
local n0 = tonumber(meta[4] or '0')
local sq, sp, sk = string.match(ARGV[2], '^([^:]*):?(%d*):?(%a*)$')
local q = tonumber(sq)
local period = tonumber(sp) or 0
local kl = sk == 'kl'
local counts, codes = {}, {}
local updates, applied, held = 0, 0, ''
local clicks_only = ARGV[3] == 'click'
local logged = clicks_only and 'metric' or 'outcome'
-- a cell of W before this impression: the policy's W is K*K doubles; the click metric's
-- cells are fields of the metrics hash, each the shortest text of its double (%.17g)
local function cell_of(i, j, off)
  if clicks_only then return tonumber(redis.call('HGET', W, 'w:click:' .. i .. ':' .. j) or '0') end
  return (struct.unpack('<d', redis.call('GETRANGE', W, off, off + 7)))
end
local function put(off, field, x)
  if clicks_only then
    redis.call('HSET', W, 'w:click:' .. field, string.format('%.17g', x))
  else
    redis.call('SETRANGE', W, off, struct.pack('<d', x))
  end
end
local function add_metric_segments(seg, writes)
  for label in string.gmatch(seg, '[^,]+') do
    redis.call('HINCRBY', W, 'sn:click:' .. label, 1)
    for _, w in ipairs(writes) do
      for _, f in ipairs({{w[6], w[8]}, {w[7], 1 - w[8]}}) do
        local field = 's:click:' .. label .. ':' .. f[1]
        local v = tonumber(redis.call('HGET', W, field) or '0') + f[2]
        redis.call('HSET', W, field, string.format('%.17g', v))
      end
    end
  end
end
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
    -- cell: W's cells as this impression's outcomes so far leave them (by byte offset), so
    -- several outcomes of one pair each add (bandits/outcomes.py; bandits/outcome_cases.json)
    local writes, trip, no, cell = {}, false, 0, {}
    for si, sj, ss, sw in string.gmatch(outcomes, '(%d+),(%d+),([^,;]+),(%d)') do
      local i, j, s = tonumber(si), tonumber(sj), tonumber(ss)
      no = no + 1
      if i ~= j then
        local oij, oji = 8 * (i * K + j), 8 * (j * K + i)
        local wij = (cell[oij] or cell_of(i, j, oij)) + s
        local wji = (cell[oji] or cell_of(j, i, oji)) + (1 - s)
        cell[oij], cell[oji] = wij, wji
        if q and sw ~= '0' and guard_trips(q, kl, tonumber(sw), wij, wji) then
          trip = true
        end
        writes[#writes + 1] = {oij, wij, oji, wji, s == 0.5 and math.min(i, j) .. ':' .. math.max(i, j),
                               i .. ':' .. j, j .. ':' .. i, s}
      end
    end
    if no > 0 and guard_periodic(period, n0 + updates + 1) then trip = true end
    if trip then
      held = id
      break
    end
    for _, w in ipairs(writes) do
      put(w[1], w[6], w[2])
      put(w[3], w[7], w[4])
      if w[5] then
        if clicks_only then redis.call('HINCRBY', W, 't:click:' .. w[5], 1)
        else redis.call('HINCRBY', KEYS[5], w[5], 1) end
      end
    end
    local seg = redis.call('HGET', imp, 'seg')
    if no > 0 then
      updates = updates + 1
      if seg and clicks_only then add_metric_segments(seg, writes)
      elseif seg then add_segments(KEYS[6], seg, writes) end
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
  if updates > 0 then redis.call('HINCRBY', W, 'n:click', updates) end
else
  if updates > 0 then redis.call('HINCRBY', exp, 'n', updates) end
  if applied > 0 then redis.call('HINCRBY', exp, 'version', 1) end
end
if held ~= '' then
  redis.call('HSET', exp, 'hold', held)
  return {'held', held, unpack(codes)}
end
return {'ok', '', unpack(codes)}
