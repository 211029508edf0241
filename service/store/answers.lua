-- @keys health exp
-- @argv window least share now reprobe_s | arm code
-- (declared in service/store/scripts.py)
-- KEYS: health, exp; ARGV: window, least, share, now, reprobe seconds, then (arm, code)
-- pairs -> per pair {answers in the window, empties, unparseable, marked degraded now}.
-- Each code ('o' results, 'e' no results, 'u' unparseable) is put first in 'w:<arm>', a
-- string of the arm's last <window> codes; an arm not yet degraded ('d:<arm>' unset) with
-- at least <least> codes of which <share> or more are 'e' or 'u' is marked: 'd:<arm>' the
-- reason, 'u:<arm>' when it is next probed. A window of only results is dropped once
-- full. {} when the experiment is gone.
if redis.call('EXISTS', KEYS[2]) == 0 then return {} end
local size, least, share = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local out = {}
for i = 6, #ARGV, 2 do
  local arm = ARGV[i]
  local s = string.sub(ARGV[i + 1] .. (redis.call('HGET', KEYS[1], 'w:' .. arm) or ''), 1, size)
  local _, e = string.gsub(s, 'e', '')
  local _, u = string.gsub(s, 'u', '')
  if e + u == 0 and #s >= size then
    redis.call('HDEL', KEYS[1], 'w:' .. arm)  -- a full window of results: forgotten
  else
    redis.call('HSET', KEYS[1], 'w:' .. arm, s)
  end
  local marked = 0
  if #s >= least and (e + u) >= share * #s and redis.call('HEXISTS', KEYS[1], 'd:' .. arm) == 0 then
    local reason = 'no results'
    if u > e then reason = 'unparseable results' end
    redis.call('HSET', KEYS[1], 'd:' .. arm, reason,
               'u:' .. arm, tostring(tonumber(ARGV[4]) + tonumber(ARGV[5])))
    marked = 1
  end
  out[#out + 1] = {#s, e, u, marked}
end
return out
