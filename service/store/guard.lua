-- The guard's check (service.credit.guard.Guard.trips and .periodic), included by the
-- credit script. The one table of cases both implementations are tested against is
-- tests/cases/guard.json (tests/unit/test_guard_cases.py in Python,
-- tests/service/test_guard_lua.py here, in a real Redis).

-- the verdicts' edge test (bandits.confidence.may_cross): whether a pair with counts
-- wij, wji draws the betting edge, either side, with big = log(1/level) less a margin and
-- floor the evidence floor (bandits.confidence.guard_bounds); the 20 constant bets'
-- log-capitals per win and per loss are computed here as bandits.confidence.BET_GAPS
local EDGE_WIN, EDGE_LOSS = {}, {}
for k = 0, 19 do
  local g = 0.45 * 2 ^ (-0.5 * k)
  EDGE_WIN[k + 1], EDGE_LOSS[k + 1] = math.log(1 + 2 * g), math.log(1 - 2 * g)
end
local EDGE_LOG_D = math.log(20)
local function edge_crosses(big, floor, wij, wji)
  local w = math.max(wij, wji)
  local n = wij + wji
  local s = w - 0.5 * n
  if s <= 0 or 4 * s * s < n * floor then return false end
  local lose, comp, top = n - w, {}, -math.huge
  for k = 1, 20 do
    local c = w * EDGE_WIN[k] + lose * EDGE_LOSS[k]
    comp[k] = c
    if c > top then top = c end
  end
  local sum = 0
  for k = 1, 20 do sum = sum + math.exp(comp[k] - top) end
  return top + math.log(sum) - EDGE_LOG_D >= big
end

-- whether an outcome on a watched pair, whose new counts are wij and wji, is held:
-- side 1 either side losing, 2 only i losing (wji > wij), 3 only j losing; the pair
-- condition is d^2 > q n (d = wji - wij, n = wij + wji), or n kl(p, 1/2) > q with kl;
-- side + 4: also when the counts draw the verdicts' edge (edge_crosses, with big and
-- floor; 4 alone: only then)
local function guard_trips(q, kl, side, wij, wji, big, floor)
  if side >= 4 then
    if big and big > 0 and edge_crosses(big, floor, wij, wji) then return true end
    side = side - 4
    if side == 0 then return false end
  end
  local d = wji - wij
  if (side == 2 and d <= 0) or (side == 3 and d >= 0) then return false end
  local n = wij + wji
  if not kl then
    return d * d > q * n
  end
  local w = math.min(wij, wji)
  if 2 * w >= n then return false end
  local p = w / n
  local v = (1 - p) * math.log(2 * (1 - p))
  if p > 0 then v = v + p * math.log(2 * p) end
  return n * v > q
end

-- whether the outcome that makes the policy's n_updates equal to n is held whatever it
-- is (a periodic check runs then; period 0: none)
local function guard_periodic(period, n)
  return period > 0 and n % period == 0
end

