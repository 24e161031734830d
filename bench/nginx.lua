-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- What profiling costs a server: Debian's nginx with its Lua module on our
-- library (OpenResty's flavour: the module loads no other), two workers,
-- loaded over loopback by wrk. Each round starts nginx afresh in every
-- setting, in an order shuffled anew, so that each setting and the
-- baseline (our library, no profile) see the same machine; a round's
-- ratios are the setting's against that round's baseline, and the table
-- gives their median and their range over the rounds. Requests per second
-- are wrk's; the workers' CPU time per request (their utime + stime over
-- the measured run, from /proc) is steadier where wall time drifts.
-- Usage: luajit bench/nginx.lua LIBDIR WORKDIR [ROUNDS] [SECONDS]
local harness = require("harness")

local libdir, work = arg[1], arg[2]
assert(libdir and work, "usage: nginx.lua LIBDIR WORKDIR [ROUNDS] [SECONDS]")
local rounds = tonumber(arg[3]) or 9
local seconds = tonumber(arg[4]) or 3
local MODULES = "/usr/lib/nginx/modules"

local function sh(cmd)
  local ok = os.execute(cmd)
  return ok == true or ok == 0
end

local capture = harness.capture
local function slurp(path)
  local f = io.open(path)
  if not f then return nil end
  local s = f:read("*a")
  f:close()
  return s
end

for _, need in ipairs({ "nginx", "wrk" }) do
  if not sh("command -v " .. need .. " >/dev/null") then
    print("skipped: no " .. need .. " (bench/apt-packages)")
    os.exit(0)
  end
end
if not io.open(MODULES .. "/ngx_http_lua_module.so") then
  print("skipped: no nginx Lua module (libnginx-mod-http-lua)")
  os.exit(0)
end
if not capture("nm -D " .. libdir .. "/libluajit-5.1.so.2 2>/dev/null"):find("lua_setexdata") then
  print("skipped: " .. libdir .. " holds no OpenResty-flavour library "
        .. "(make BUILD=build-openresty LUAJIT_SRC=..., or make bench-nginx NGINX_LIB=DIR)")
  os.exit(0)
end

-- A request that does what a handler does: a table filled, a string made.
local HANDLER = "local t = {} for i = 1, 200 do t[i] = i * 2 end "
  .. "ngx.say(#table.concat(t, ','))"

local SETTINGS = {
  { "baseline", nil },
  { "cpu 10 ms", "cpu:interval=10,path=%s/cpu-%%p.bin" },
  { "cpu 1 ms", "cpu:interval=1,path=%s/cpu-%%p.bin" },
  { "cpu 10 ms, clock=wall", "cpu:interval=10,clock=wall,path=%s/cpu-%%p.bin" },
  { "cpu 1 ms, clock=wall", "cpu:interval=1,clock=wall,path=%s/cpu-%%p.bin" },
  { "mem sampled 512 KiB", "mem:sample=524288,path=%s/mem-%%p.bin" },
  { "mem every event", "mem:path=%s/mem-%%p.bin" },
}

sh("mkdir -p " .. work)
local prefix = work .. "/nginx-bench"
local streams = prefix .. "/streams"

local function write_conf(port)
  sh("mkdir -p " .. prefix .. "/conf " .. prefix .. "/logs " .. streams
     .. " && chmod 1777 " .. streams)
  local f = assert(io.open(prefix .. "/conf/nginx.conf", "w"))
  f:write(([[
load_module %s/ndk_http_module.so;
load_module %s/ngx_http_lua_module.so;
env LJPROF;
worker_processes 2;
pid %s/nginx.pid;
error_log %s/error.log error;
events { worker_connections 256; }
http {
  access_log off;
  server {
    listen 127.0.0.1:%d reuseport;
    location / { content_by_lua_block { %s } }
  }
}
]]):format(MODULES, MODULES, prefix, prefix, port, HANDLER))
  f:close()
end

local function master()
  local pid = tonumber(slurp(prefix .. "/nginx.pid") or "")
  return pid and sh("kill -0 " .. pid .. " 2>/dev/null") and pid or nil
end

local function workers(m)
  local out = {}
  for pid in capture("pgrep -P " .. m):gmatch("%d+") do out[#out + 1] = pid end
  return out
end

-- utime + stime of the processes, in clock ticks.
local function cpu_ticks(pids)
  local t = 0
  for _, pid in ipairs(pids) do
    local stat = slurp("/proc/" .. pid .. "/stat") or ""
    local rest = stat:match("%) (.*)$") or ""
    local fields = {}
    for w in rest:gmatch("%S+") do fields[#fields + 1] = w end
    -- After the name: state is field 3, utime 14, stime 15 (proc(5)).
    t = t + (tonumber(fields[12]) or 0) + (tonumber(fields[13]) or 0)
  end
  return t
end

local function wrk(port, secs)
  local out = capture(("wrk -t1 -c16 -d%ds http://127.0.0.1:%d/ 2>&1"):format(secs, port))
  return tonumber(out:match("Requests/sec:%s*([%d.]+)")),
         tonumber(out:match("(%d+) requests in"))
end

local function wait(cond)
  for _ = 1, 200 do
    if cond() then return true end
    sh("sleep 0.05")
  end
  return false
end

-- One setting, once: requests per second, CPU seconds per request.
local function run(ljprof)
  local env = "LD_LIBRARY_PATH=" .. libdir
  if ljprof then env = env .. " LJPROF='" .. ljprof:format(streams) .. "'" end
  local port
  for _ = 1, 10 do  -- a port another program holds: nginx says so, next
    port = math.random(20000, 60000)
    write_conf(port)
    if sh(env .. " nginx -p " .. prefix .. " -c conf/nginx.conf 2>/dev/null") then
      break
    end
    port = nil
  end
  assert(port, "nginx did not start: " .. (slurp(prefix .. "/error.log") or ""))
  local m = assert(wait(master) and master(), "no nginx master")
  wrk(port, 1)  -- warm: every worker has run its handler, traces compiled
  local ws = workers(m)
  local t0 = cpu_ticks(ws)
  local rps, requests = wrk(port, seconds)
  local ticks = cpu_ticks(ws) - t0
  sh("nginx -p " .. prefix .. " -c conf/nginx.conf -s quit 2>/dev/null")
  wait(function() return not master() end)
  sh("rm -f " .. streams .. "/*")
  local hz = tonumber(capture("getconf CLK_TCK")) or 100
  return rps, requests and requests > 0 and ticks / hz / requests or nil
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  return n % 2 == 1 and xs[(n + 1) / 2] or (xs[n / 2] + xs[n / 2 + 1]) / 2
end

math.randomseed(os.time())
local rps, cpu = {}, {}
for _, s in ipairs(SETTINGS) do rps[s[1]], cpu[s[1]] = {}, {} end
for r = 1, rounds do
  local order = {}
  for i, s in ipairs(SETTINGS) do order[i] = s end
  for i = #order, 2, -1 do
    local j = math.random(i)
    order[i], order[j] = order[j], order[i]
  end
  local got = {}
  for _, s in ipairs(order) do got[s[1]] = { run(s[2]) } end
  local base = got.baseline
  for _, s in ipairs(SETTINGS) do
    local g = got[s[1]]
    table.insert(rps[s[1]], g[1] / base[1])
    table.insert(cpu[s[1]], g[2] / base[2])
  end
  io.stderr:write(("round %d/%d: baseline %.0f req/s, %.1f µs CPU/req\n")
                  :format(r, rounds, base[1], base[2] * 1e6))
end

print(("nginx, 2 workers, wrk -t1 -c16 for %d s, %d rounds (ratios to the "
       .. "round's baseline: median [min, max])"):format(seconds, rounds))
print("")
print("| setting | req/s | workers' CPU / request |")
print("|---|---:|---:|")
local function cell(xs)
  local lo, hi = math.huge, -math.huge
  for _, x in ipairs(xs) do lo, hi = math.min(lo, x), math.max(hi, x) end
  return ("%.3f [%.3f, %.3f]"):format(median(xs), lo, hi)
end
for _, s in ipairs(SETTINGS) do
  if s[2] then print(("| %s | %s | %s |"):format(s[1], cell(rps[s[1]]), cell(cpu[s[1]]))) end
end
sh("rm -rf " .. prefix)
