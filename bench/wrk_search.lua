-- wrk script of bench/service_load.py --generator wrk: per-request latency and the
-- Server-Timing parts of every answer, optionally paced at a fixed rate.
--
-- Run with ONE CONNECTION PER THREAD (wrk -t N -c N): request() and response() then
-- alternate strictly in each thread's Lua state, which is what pairs a response with the
-- time its request was sent (wrk's Lua API does not say which connection an answer
-- belongs to).
--
-- Environment:
--   WRK_PATHS  file with one request path per line, sent in turn by each thread
--   WRK_OUT    file written at the end: one line per answered request,
--              "status latency_ms rankers_ms rankduel_ms lag_ms"
--              (Server-Timing parts "nan" when absent; lag: how late the request was
--              sent after its due time, 0 in the closed loop)
--   WRK_THREADS  wrk's -t (and -c)
--   WRK_RATE   total requests/s over all threads (open loop); absent or 0: closed loop
--              (each connection sends its next request as soon as the answer is read)
--
-- Pacing (WRK_RATE): connection n of N sends its i-th request at
-- start + (n + i * N) / rate, so the N connections together send one request every
-- 1 / rate seconds, whatever the answers' latency, as long as an answer comes back
-- before the connection's next due time (its period is N / rate). A request sent late
-- because the previous answer on its connection was slow is counted in lag_ms. wrk's
-- delay() has 1 ms resolution; it is rounded up, so a request is never early.

local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } rd_timespec;
int clock_gettime(int clk_id, rd_timespec *tp);
]]
local ts = ffi.new("rd_timespec")
local CLOCK_MONOTONIC = 1
local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

-- main state: number the threads, collect their rows at the end
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

-- thread states
local paths = {}
local rate = tonumber(os.getenv("WRK_RATE") or "0") or 0
local k = 0          -- next path index
local i = 0          -- next request index of this connection
local start = nil    -- schedule origin (open loop)
local due = nil      -- due time of the request delay() scheduled
local armed = false  -- delay() was called: the next request() is one wrk sends
local sent = nil     -- send time of the request in flight
local lag = 0
rows = {}
overlaps = 0  -- request() while an answer was still due on this thread's connection
orphans = 0   -- an answer with no request in flight

function init(args)
  local f = assert(io.open(os.getenv("WRK_PATHS"), "r"))
  for line in f:lines() do
    if #line > 0 then paths[#paths + 1] = line end
  end
  f:close()
  assert(#paths > 0, "WRK_PATHS is empty")
  k = id % #paths
end

local function next_due()
  local n = tonumber(os.getenv("WRK_THREADS"))  -- wrk's -t (= -c)
  if start == nil then start = now() + 0.05 end
  return start + (id + i * n) / rate
end

function delay()
  armed = true
  if rate <= 0 then
    due = nil
    return 0
  end
  due = next_due()
  local wait_ms = (due - now()) * 1000
  if wait_ms <= 0 then return 0 end
  return math.ceil(wait_ms)
end

function request()
  local path = paths[k + 1]
  k = (k + 1) % #paths
  local t = now()
  -- wrk calls request() once before the threads start, to count pipelined requests;
  -- that call is not a request sent. Every request sent follows a delay() call.
  if not armed then return wrk.format("GET", path) end
  armed = false
  if rate > 0 then
    lag = math.max(0, t - due)
    i = i + 1
  end
  if sent ~= nil then overlaps = overlaps + 1 end
  sent = t
  return wrk.format("GET", path)
end

local function st_dur(value, name)
  if value == nil then return "nan" end
  local v = string.match(value, name .. ";dur=([%d%.eE+-]+)")
  return v or "nan"
end

function response(status, headers, body)
  local t = now()
  if sent == nil then
    orphans = orphans + 1
    return
  end
  local st = headers["Server-Timing"]
  if st == nil then
    for key, v in pairs(headers) do
      if string.lower(key) == "server-timing" then st = v end
    end
  end
  rows[#rows + 1] = string.format("%d %.4f %s %s %.4f", status, (t - sent) * 1000,
                                  st_dur(st, "rankers"), st_dur(st, "rankduel"), lag * 1000)
  sent = nil
end

function done(summary, latency, requests)
  local out = assert(io.open(os.getenv("WRK_OUT"), "w"))
  local n_overlaps, n_orphans = 0, 0
  for _, thread in ipairs(threads) do
    n_overlaps = n_overlaps + thread:get("overlaps")
    n_orphans = n_orphans + thread:get("orphans")
    local r = thread:get("rows")
    if r ~= nil and #r > 0 then
      out:write(table.concat(r, "\n"), "\n")
    end
  end
  out:close()
  -- wrk's own latency histogram (microseconds), a check on the Lua-side timing
  io.write(string.format("wrk_summary requests=%d duration_us=%d p50_us=%d p99_us=%d "
                         .. "errors_status=%d errors_timeout=%d errors_connect=%d "
                         .. "errors_read=%d errors_write=%d overlaps=%d orphans=%d\n",
                         summary.requests, summary.duration, latency:percentile(50),
                         latency:percentile(99), summary.errors.status,
                         summary.errors.timeout, summary.errors.connect,
                         summary.errors.read, summary.errors.write, n_overlaps, n_orphans))
end
