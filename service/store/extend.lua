-- KEYS: imp, pending; ARGV: due, imp_id, expected shown (JSON), shown, record, urls ("" none)
-- -> 1 extended, 0 changed since read (another page came first), -1 unknown, -2 closed
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -2 end
if redis.call('HGET', KEYS[1], 'shown') ~= ARGV[3] then return 0 end
redis.call('HINCRBY', KEYS[1], 'reports', 1)
redis.call('HSET', KEYS[1], 'shown', ARGV[4], 'record', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'urls', ARGV[6]) end
redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[2])
return 1
