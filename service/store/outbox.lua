-- @keys exp audit outbox hooks
-- @argv max_audit maxlen audit_entry id type payload once_field once_value
-- (declared in service/store/scripts.py)
-- KEYS: exp, audit, outbox, hooks state; ARGV: the most audit entries kept, the outbox's
-- MAXLEN, the audit entry ("" for none), the event's id, type and payload, then a "once"
-- field of the hooks state and its value ("" for none).
-- Appends the audit entry and the event together, only to an experiment that exists;
-- with a "once" field, only when the field does not hold the value yet (then sets it), so
-- that an event told once (a ramp step) is told once whoever detects it. Returns the
-- event's stream id, or false when nothing was appended.
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
if ARGV[7] ~= '' then
  if redis.call('HGET', KEYS[4], ARGV[7]) == ARGV[8] then return false end
  redis.call('HSET', KEYS[4], ARGV[7], ARGV[8])
end
if ARGV[3] ~= '' then
  redis.call('RPUSH', KEYS[2], ARGV[3])
  redis.call('LTRIM', KEYS[2], -tonumber(ARGV[1]), -1)
end
return redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*',
                  'id', ARGV[4], 'type', ARGV[5], 'payload', ARGV[6])
