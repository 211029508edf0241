-- @keys imp pending drains
-- @argv now imp_id token lease_expires
-- (declared in service/store/scripts.py)
-- KEYS: imp, pending, drains; ARGV: now, imp_id, drain token, drain lease expiry
-- returns -1 unknown, 0 already closed, 1 closed, 2 closed and a drain lease taken (no
-- drain was queued or running)
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return 0 end
redis.call('HSET', KEYS[1], 'closed', '1')
redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('ZADD', KEYS[3], ARGV[4], ARGV[3])
  return 2
end
return 1
