-- @keys imp clicks pending events
-- @argv due imp_id ttl max_reports dwell | position
-- (declared in service/store/scripts.py)
-- KEYS: imp, clicks, pending, events; ARGV: due, imp_id, ttl, max reports,
-- "position:dwell_ms,...", positions... -> positions new, or -1 unknown, -2 closed, -3 over
-- its reports; the report is appended to the events stream as a click event
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -2 end
if tonumber(redis.call('HGET', KEYS[1], 'reports') or '0') >= tonumber(ARGV[4]) then
  return -3
end
redis.call('HINCRBY', KEYS[1], 'reports', 1)
for p, ms in string.gmatch(ARGV[5], '(%d+):(%d+)') do
  local had = tonumber(redis.call('HGET', KEYS[1], 'dwell:' .. p) or '-1')
  if tonumber(ms) > had then redis.call('HSET', KEYS[1], 'dwell:' .. p, ms) end
end
local added = 0
for i = 6, #ARGV do added = added + redis.call('SADD', KEYS[2], ARGV[i]) end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], 'XX', ARGV[1], ARGV[2])
redis.call('XADD', KEYS[4], '*', 'type', 'click', 'id', ARGV[2],
           'positions', table.concat(ARGV, ',', 6), 'dwell', ARGV[5])
return added
