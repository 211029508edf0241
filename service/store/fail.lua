-- @keys health exp
-- @argv arm now threshold quarantine_s
-- (declared in service/store/scripts.py)
-- KEYS: health, exp; ARGV: arm, now, threshold, quarantine seconds -> {failures, opened}
-- ({0, 0} when the experiment is gone: nothing written). Each quarantine opened counts in
-- 'o:<arm>' (quarantines in a row; a success clears it with the failures)
if redis.call('EXISTS', KEYS[2]) == 0 then return {0, 0} end
local n = redis.call('HINCRBY', KEYS[1], 'f:' .. ARGV[1], 1)
local q = tonumber(redis.call('HGET', KEYS[1], 'q:' .. ARGV[1]) or '0')
local now = tonumber(ARGV[2])
if n >= tonumber(ARGV[3]) and q <= now then
  redis.call('HSET', KEYS[1], 'q:' .. ARGV[1], tostring(now + tonumber(ARGV[4])))
  redis.call('HINCRBY', KEYS[1], 'o:' .. ARGV[1], 1)
  return {n, 1}
end
return {n, 0}
