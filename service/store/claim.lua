-- @keys pending t
-- @argv now lease_expires limit
-- (declared in service/store/scripts.py)
-- KEYS: pending, t; ARGV: now, lease expiry, limit -> {t, ids}
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return {redis.call('GET', KEYS[2]) or '0', ids}
