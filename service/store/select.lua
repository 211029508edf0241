-- @keys exp t health
-- @argv
-- (declared in service/store/scripts.py)
-- KEYS: exp, t, health -> {t, version, health as a flat list}
local v = redis.call('HGET', KEYS[1], 'version')
if not v then return nil end
return {redis.call('INCR', KEYS[2]), tonumber(v), redis.call('HGETALL', KEYS[3])}
