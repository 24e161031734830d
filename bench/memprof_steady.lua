-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- The steady cost of memprof's call stacks and sampling, without the cost
-- of starting a profile (the symbol table, about 50 ms, weighs on the
-- half-second programs of bench/memprof.lua): each program run in one
-- process plain, under v4, with stacks and sampled at 512 KiB, both also
-- with native frames in the stacks, rounds
-- interleaved, the median CPU time (os.clock: the writer thread's too)
-- and the median wall-clock time of each kept (a second table); the profile
-- is started before and stopped after each timed run. The traces are
-- flushed before each run: alloc_tree's recursion traces degrade run after
-- run in one process, profile or not (0.7 s, then 1.0 s, then 2.3 s).
-- Usage: luajit bench/memprof_steady.lua WORKDIR [ROUNDS [nonative]]
local work = assert(arg[1], "usage: memprof_steady.lua WORKDIR [ROUNDS]")
local rounds = tonumber(arg[2]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local ffi = require("ffi")
ffi.cdef[[
struct bench_timespec { long tv_sec, tv_nsec; };
int clock_gettime(int clk, struct bench_timespec *ts);
]]
local ts = ffi.new("struct bench_timespec")
local function wall()  -- CLOCK_MONOTONIC, seconds.
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end
local modes = {
  { "plain" },
  { "v4", { path = "/dev/null", format = "v4" } },
  { "stacks", { path = "/dev/null", stacks = true } },
  { "sampled", { path = "/dev/null", sample = 524288 } },
  { "native", { path = "/dev/null", native = true } },
  { "native_sampled", { path = "/dev/null", native = true, sample = 524288 } },
}

local function median(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)]
end

-- A third argument, "nonative", leaves out the native modes (10-20 times
-- slower than the rest): their columns say "-".
if arg[3] == "nonative" then
  for i = #modes, 1, -1 do
    if modes[i][1]:match("^native") then table.remove(modes, i) end
  end
end

local function ratio(a, b) return a and b and ("%.3f"):format(a / b) or "-" end

local function row(p, m)
  return ("| %s | %.3f | %s | %s | %s | %s | %s | %s | %s |"):format(p,
         m.plain, ratio(m.v4, m.plain), ratio(m.stacks, m.plain),
         ratio(m.stacks, m.v4), ratio(m.sampled, m.plain),
         ratio(m.native, m.plain), ratio(m.native, m.stacks),
         ratio(m.native_sampled, m.plain))
end

local head = "| program | plain (s) | v4 / plain | stacks / plain | stacks / v4 | sampled / plain" ..
             " | native / plain | native / stacks | native_sampled / plain |\n" ..
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
local cpu, wallrows = {}, {}
for _, p in ipairs({ "alloc_churn", "alloc_tree", "alloc_strings", "alloc_deep" }) do
  local chunk = assert(loadfile(dir .. "/programs/" .. p .. ".lua"))
  local t, w = {}, {}
  for _, m in ipairs(modes) do t[m[1]], w[m[1]] = {}, {} end
  for _ = 1, rounds do
    for _, m in ipairs(modes) do
      collectgarbage()
      jit.flush()
      if m[2] then assert(misc.memprof.start(m[2])) end
      local t0, w0 = os.clock(), wall()
      chunk()
      local t1, w1 = os.clock(), wall()
      if m[2] then assert(misc.memprof.stop()) end
      table.insert(t[m[1]], t1 - t0)
      table.insert(w[m[1]], w1 - w0)
    end
  end
  local mt, mw = {}, {}
  for _, m in ipairs(modes) do
    mt[m[1]], mw[m[1]] = median(t[m[1]]), median(w[m[1]])
  end
  cpu[#cpu + 1] = row(p, mt)
  wallrows[#wallrows + 1] = row(p, mw)
end
print("CPU time (all threads):")
print(head)
print(table.concat(cpu, "\n"))
print("\nWall-clock time:")
print(head)
print(table.concat(wallrows, "\n"))
