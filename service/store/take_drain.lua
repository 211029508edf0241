-- @keys drains
-- @argv now token lease_expires limit
-- (declared in service/store/scripts.py)
-- KEYS: drains; ARGV: now, token, lease expiry, limit -> 1 taken, 0 not
-- (a token that still holds a live lease renews it, whatever the limit)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
  return 1
end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[2])
return 1
