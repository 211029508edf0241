-- @keys exp audit
-- @argv max_entries | entry
-- (declared in service/store/scripts.py)
-- KEYS: exp, audit; ARGV: the most entries kept, then entries (only to an experiment
-- that exists)
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 2))
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[1]), -1)
return 1
