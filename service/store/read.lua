-- @keys | imp clicks
-- @argv
-- (declared in service/store/scripts.py)
-- KEYS: imp, clicks per impression -> per impression '' (unknown or expired) or the JSON
-- array [record, arms, forfeits, duel, created, credited, [clicked positions],
-- [[position, dwell ms], ...], reports, seg] (the stored fields are JSON already: one string to
-- decode per impression, not a dozen replies)
local out = {}
for k = 1, #KEYS, 2 do
  local v = redis.call('HMGET', KEYS[k], 'record', 'arms', 'forfeits', 'duel', 'created',
                       'credited', 'reports', 'seg')
  if not v[2] then
    out[#out + 1] = ''
  else
    local c = redis.call('SMEMBERS', KEYS[k + 1])
    local dwell = {}
    for _, p in ipairs(c) do
      local ms = redis.call('HGET', KEYS[k], 'dwell:' .. p)
      if ms then dwell[#dwell + 1] = '[' .. p .. ',' .. ms .. ']' end
    end
    out[#out + 1] = '[' .. (v[1] or 'null') .. ',' .. v[2] .. ',' .. (v[3] or '[]') .. ','
      .. (v[4] or '0') .. ',' .. (v[5] or '0') .. ',' .. (v[6] and '1' or '0') .. ',['
      .. table.concat(c, ',') .. '],[' .. table.concat(dwell, ',') .. '],'
      .. (v[7] or '0') .. ',"' .. (v[8] or '') .. '"]'
  end
end
return out
