-- The outcome->W write: the rule of bandits/outcomes.py, the only Lua that states it,
-- included by the credit script (credit.lua: the policy's W, its ties and per-segment
-- counts; the click target's counts in the metrics hash) and the metrics' credit script
-- (metric_credit.lua). An outcome {i, j, s} adds s to W[i][j] and 1 - s to W[j][i],
-- nothing when i == j, an addition of 0 is no write, and a tie (s == 0.5) is counted
-- once more for its pair 'min:max'. Per segment label the same, and each label (like
-- the total) counts an impression with any outcome (i == j included) once in its n.
-- One table of cases (tests/cases/outcomes.json) checks every script that includes this.
-- include: fields

-- the additions of one outcome, {row, column, amount} each, and its tie's pair (or nil)
local function outcome_adds(i, j, s)
  if i == j then return {}, nil end
  local adds = {}
  if s ~= 0 then adds[#adds + 1] = {i, j, s} end
  if s ~= 1 then adds[#adds + 1] = {j, i, 1 - s} end
  if s == 0.5 then return adds, math.min(i, j) .. ':' .. math.max(i, j) end
  return adds, nil
end

-- one impression's outcomes {{i, j, s, ...}, ...} as they leave W's cells, each cell read
-- once through read(i, j) and then summed in order (several outcomes of one pair each
-- add) -> cells {{i, j, value}, ...} (those with an addition, first added first: the
-- ones to write), steps {{i, j, wij, wji, outcome}, ...} (per outcome with i ~= j, the
-- pair's cells after it: what the guard checks) and ties {'min:max', ...}
local function outcome_cells(outs, read)
  local at, cells, steps, ties = {}, {}, {}, {}
  local function cell(a, b)
    local f = a .. ':' .. b
    local c = at[f]
    if not c then
      c = {a, b, read(a, b)}
      at[f] = c
    end
    return c
  end
  for _, o in ipairs(outs) do
    local adds, tie = outcome_adds(o[1], o[2], o[3])
    for _, x in ipairs(adds) do
      local c = cell(x[1], x[2])
      if not c.written then
        c.written = true
        cells[#cells + 1] = c
      end
      c[3] = c[3] + x[3]
    end
    if o[1] ~= o[2] then
      steps[#steps + 1] = {o[1], o[2], cell(o[1], o[2])[3], cell(o[2], o[1])[3], o}
    end
    if tie then ties[#ties + 1] = tie end
  end
  return cells, steps, ties
end

-- the field names of one set of counts in a hash: W's prefix, the ties' prefix and n
local function segment_fields(label)
  return {W = SEGMENT_F.W .. label .. ':', ties = SEGMENT_F.ties .. label .. ':',
          n = SEGMENT_F.n .. label}
end

local function metric_fields(metric, label)
  if label == nil then
    return {W = METRIC_F.W .. metric .. ':', ties = METRIC_F.ties .. metric .. ':',
            n = METRIC_F.n .. metric}
  end
  return {W = METRIC_F.segment_W .. metric .. ':' .. label .. ':',
          ties = METRIC_F.segment_ties .. metric .. ':' .. label .. ':',
          n = METRIC_F.segment_n .. metric .. ':' .. label}
end

-- a reader of W's cells: the policy's W (K*K little-endian doubles) or a hash's fields
-- f.W .. 'i:j', each the shortest text of its double (absent: 0)
local function outcome_matrix_reader(key, K)
  return function(i, j)
    local off = 8 * (i * K + j)
    return (struct.unpack('<d', redis.call('GETRANGE', key, off, off + 7)))
  end
end

local function outcome_text_reader(key, f)
  return function(i, j)
    return tonumber(redis.call('HGET', key, f.W .. i .. ':' .. j) or '0')
  end
end

-- write what outcome_cells computed: the cells to the policy's W (K given) or as text
-- fields of hash key (f.W .. 'i:j', %.17g: the counts are the double sums in the order
-- applied), and each tie to hash tkey's field tprefix .. 'min:max'
local function outcome_put(key, K, f, cells, tkey, tprefix, ties)
  for _, c in ipairs(cells) do
    if K then
      redis.call('SETRANGE', key, 8 * (c[1] * K + c[2]), struct.pack('<d', c[3]))
    else
      redis.call('HSET', key, f.W .. c[1] .. ':' .. c[2], string.format('%.17g', c[3]))
    end
  end
  for _, p in ipairs(ties) do redis.call('HINCRBY', tkey, tprefix .. p, 1) end
end

-- add one impression's outcomes (at least one) to the counts of hash key named by f
-- (W, ties, n + 1): as text (read, add, %.17g) or, text false, by HINCRBYFLOAT (the
-- per-segment hash, whose additions the hold's transaction makes the same way)
local function outcome_count(key, f, outs, text)
  redis.call('HINCRBY', key, f.n, 1)
  if text then
    local cells, _, ties = outcome_cells(outs, outcome_text_reader(key, f))
    outcome_put(key, nil, f, cells, key, f.ties, ties)
    return
  end
  for _, o in ipairs(outs) do
    local adds, tie = outcome_adds(o[1], o[2], o[3])
    for _, x in ipairs(adds) do
      redis.call('HINCRBYFLOAT', key, f.W .. x[1] .. ':' .. x[2], x[3])
    end
    if tie then redis.call('HINCRBY', key, f.ties .. tie, 1) end
  end
end
