-- @keys imp pending counters shown exp events [attribution touches]
-- @argv imp_id ttl due counters arms share fields event events_maxlen [attribution_ttl entry touches]
-- (declared in service/store/scripts.py)
-- KEYS: imp, pending, counters, shown, exp, events; ARGV: imp_id, ttl, due, "name:n,...",
-- "arm,...", exposure share per arm, the impression's field/value pairs (a JSON array of
-- strings), its event (JSON, appended to the events stream), the stream's MAXLEN (0: no
-- trimming; else trimmed to about that many); for an experiment with metrics of an action
-- only (service.outcomes), KEYS 7 the impression's attribution entry (and 8 the user's
-- last touches, when the search named a user), ARGV 10 their TTL, 11 the entry (JSON), 12
-- the touches' field/value pairs (a JSON array of strings; last touch wins) -> 1 stored,
-- 0 already there (a retried call), -1 the experiment is gone (nothing written)
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[5]) == 0 then return -1 end
redis.call('HSET', KEYS[1], unpack(cjson.decode(ARGV[7])))
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
for name, n in string.gmatch(ARGV[4], '([^:,]+):(%d+)') do
  redis.call('HINCRBY', KEYS[3], name, n)
end
for arm in string.gmatch(ARGV[5], '%d+') do
  redis.call('HINCRBY', KEYS[4], 'n:' .. arm, 1)
  redis.call('HINCRBYFLOAT', KEYS[4], 'share:' .. arm, ARGV[6])
end
if tonumber(ARGV[9]) > 0 then
  redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[9], '*', 'type', 'impression', 'id', ARGV[1],
             'data', ARGV[8])
else
  redis.call('XADD', KEYS[6], '*', 'type', 'impression', 'id', ARGV[1], 'data', ARGV[8])
end
if ARGV[10] then
  redis.call('SET', KEYS[7], ARGV[11], 'EX', ARGV[10])
  if KEYS[8] then
    redis.call('HSET', KEYS[8], unpack(cjson.decode(ARGV[12])))
    redis.call('EXPIRE', KEYS[8], ARGV[10])
  end
end
return 1
