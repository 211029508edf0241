-- The outcome->W write: the rule of bandits/outcomes.py, the only Lua that states it,
-- included by the credit script (credit.lua: the policy's W, its ties and per-segment
-- counts; the click target's counts in the metrics hash) and the metrics' credit script
-- (metric_credit.lua). An outcome {i, j, s} adds s to W[i][j] and 1 - s to W[j][i],
-- nothing when i == j, an addition of 0 is no write, and a tie (s == 0.5) is counted
-- once more for its pair 'min:max'. Per segment label the same, and each label (like
-- the total) counts an impression with any outcome (i == j included) once in its n.
-- One table of cases (tests/cases/outcomes.json) checks every script that includes this.
-- include: fields

-- one impression's outcomes {{i, j, s, ...}, ...} as the writes they make to W, in order:
-- writes {{row, column, 'row:column', amount, k}, ...} (k: the outcome's index in outs)
-- and ties {'min:max', ...}
local function outcome_writes(outs)
  local writes, ties = {}, {}
  for k, o in ipairs(outs) do
    local i, j, s = o[1], o[2], o[3]
    if i ~= j then
      if s ~= 0 then writes[#writes + 1] = {i, j, i .. ':' .. j, s, k} end
      if s ~= 1 then writes[#writes + 1] = {j, i, j .. ':' .. i, 1 - s, k} end
      if s == 0.5 then ties[#ties + 1] = math.min(i, j) .. ':' .. math.max(i, j) end
    end
  end
  return writes, ties
end

-- the same as they leave W's cells, each cell read once through read(i, j) and then
-- summed in order (several outcomes of one pair each add) -> cells {{i, j, value}, ...}
-- (those written, first written first), steps {{wij, wji, outcome}, ...} (per outcome
-- with i ~= j, its pair's cells after it: what the guard checks; only with guarded),
-- and outcome_writes' writes and ties. Cells are found by number (i * 65536 + j: fewer
-- than 65,536 arms).
local function outcome_cells(outs, read, guarded)
  local writes, ties = outcome_writes(outs)
  local at, cells, steps, w = {}, {}, {}, 1
  local function cell(a, b)
    local f = a * 65536 + b
    local c = at[f]
    if not c then
      c = {a, b, read(a, b), false}
      at[f] = c
    end
    return c
  end
  for k, o in ipairs(outs) do
    local x = writes[w]
    while x and x[5] == k do
      local c = cell(x[1], x[2])
      if not c[4] then
        c[4] = true
        cells[#cells + 1] = c
      end
      c[3] = c[3] + x[4]
      w = w + 1
      x = writes[w]
    end
    if guarded and o[1] ~= o[2] then
      steps[#steps + 1] = {cell(o[1], o[2])[3], cell(o[2], o[1])[3], o}
    end
  end
  return cells, steps, ties, writes
end

-- the field names of one set of counts in a hash: W's prefix, the ties' prefix and n
-- (made once per label in a call)
local outcome_names = {}
local function segment_fields(label)
  local f = outcome_names[label]
  if not f then
    f = {W = SEGMENT_F.W .. label .. ':', ties = SEGMENT_F.ties .. label .. ':',
         n = SEGMENT_F.n .. label}
    outcome_names[label] = f
  end
  return f
end

local function metric_fields(metric, label)
  local name = metric .. '\0' .. (label or '')
  local f = outcome_names[name]
  if f then return f end
  if label == nil then
    f = {W = METRIC_F.W .. metric .. ':', ties = METRIC_F.ties .. metric .. ':',
         n = METRIC_F.n .. metric}
  else
    f = {W = METRIC_F.segment_W .. metric .. ':' .. label .. ':',
         ties = METRIC_F.segment_ties .. metric .. ':' .. label .. ':',
         n = METRIC_F.segment_n .. metric .. ':' .. label}
  end
  outcome_names[name] = f
  return f
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

-- add one impression's writes and ties (outcome_writes', of at least one outcome) to the
-- counts of hash key named by f (W, ties, n + 1): as text (read, add, %.17g) or, text
-- false, by HINCRBYFLOAT (the per-segment hash, whose additions the hold's transaction
-- makes the same way)
local function outcome_count(key, f, writes, ties, text)
  redis.call('HINCRBY', key, f.n, 1)
  if text then
    local at, order = {}, {}
    for _, x in ipairs(writes) do
      local v = at[x[3]]
      if v == nil then
        v = tonumber(redis.call('HGET', key, f.W .. x[3]) or '0')
        order[#order + 1] = x[3]
      end
      at[x[3]] = v + x[4]
    end
    for _, pair in ipairs(order) do
      redis.call('HSET', key, f.W .. pair, string.format('%.17g', at[pair]))
    end
  else
    for _, x in ipairs(writes) do redis.call('HINCRBYFLOAT', key, f.W .. x[3], x[4]) end
  end
  for _, p in ipairs(ties) do redis.call('HINCRBY', key, f.ties .. p, 1) end
end
