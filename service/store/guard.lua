-- The guard's check (service.credit.guard.Guard.trips and .periodic), included by the
-- credit script. The one table of cases both implementations are tested against is
-- tests/cases/guard.json (tests/unit/test_guard_cases.py in Python,
-- tests/service/test_guard_lua.py here, in a real Redis).

-- whether an outcome on a watched pair, whose new counts are wij and wji, is held:
-- side 1 either side losing, 2 only i losing (wji > wij), 3 only j losing; the pair
-- condition is d^2 > q n (d = wji - wij, n = wij + wji), or n kl(p, 1/2) > q with kl
local function guard_trips(q, kl, side, wij, wji)
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

