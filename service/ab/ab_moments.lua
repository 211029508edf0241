-- ab_move(moments, arm, s0, c0, s1, c1): one user of ``arm`` goes from s0 searches (c0
-- clicked) to s1 (c1 clicked); every per-user metric's moments (n, total, squares) take
-- the increments of rollout.ab.moments.increments: (1, new, new²) on the first search
-- (s0 = 0), else (0, new - old, new² - old²). The metrics are rollout.ab.moments'
-- UserCounts.values(): ctr = c/s, searches = s, abandonment = (s - c)/s. The cases
-- tests/service/test_ab_store.py runs hold it to the Python.
local function ab_bump(key, arm, metric, old, new)
  local f = arm .. ':' .. metric .. ':'
  if old == nil then
    redis.call('HINCRBY', key, f .. 'n', 1)
    redis.call('HINCRBYFLOAT', key, f .. 'total', new)
    redis.call('HINCRBYFLOAT', key, f .. 'squares', new * new)
  else
    if new ~= old then
      redis.call('HINCRBYFLOAT', key, f .. 'total', new - old)
      redis.call('HINCRBYFLOAT', key, f .. 'squares', new * new - old * old)
    end
  end
end

local function ab_move(key, arm, s0, c0, s1, c1)
  local ctr0, n0, ab0 = nil, nil, nil
  if s0 > 0 then ctr0, n0, ab0 = c0 / s0, s0, (s0 - c0) / s0 end
  ab_bump(key, arm, 'ctr', ctr0, c1 / s1)
  ab_bump(key, arm, 'searches', n0, s1)
  ab_bump(key, arm, 'abandonment', ab0, (s1 - c1) / s1)
end
