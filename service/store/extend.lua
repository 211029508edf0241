-- @keys imp pending [attribution touches]
-- @argv due imp_id expect shown record urls [entry touches attribution_ttl]
-- (declared in service/store/scripts.py)
-- KEYS: imp, pending; ARGV: due, imp_id, expected shown (JSON), shown, record, urls ("" none)
-- and, for an experiment with metrics of an action (service.outcomes): KEYS 3 the
-- impression's attribution entry (rewritten with the longer page, if it has not expired),
-- 4 the user's last touches; ARGV 7 the entry (JSON), 8 the touches of the new documents
-- (a JSON array of field/value strings, "" none), 9 their TTL
-- -> 1 extended, 0 changed since read (another page came first), -1 unknown, -2 closed
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('HGET', KEYS[1], 'closed') == '1' then return -2 end
if redis.call('HGET', KEYS[1], 'shown') ~= ARGV[3] then return 0 end
redis.call('HINCRBY', KEYS[1], 'reports', 1)
redis.call('HSET', KEYS[1], 'shown', ARGV[4], 'record', ARGV[5])
if ARGV[6] ~= '' then redis.call('HSET', KEYS[1], 'urls', ARGV[6]) end
redis.call('ZADD', KEYS[2], 'XX', ARGV[1], ARGV[2])
if ARGV[7] and redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('SET', KEYS[3], ARGV[7], 'KEEPTTL')
  if KEYS[4] and ARGV[8] ~= '' then
    redis.call('HSET', KEYS[4], unpack(cjson.decode(ARGV[8])))
    redis.call('EXPIRE', KEYS[4], ARGV[9])
  end
end
return 1
