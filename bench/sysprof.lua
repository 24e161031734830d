-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- The platform profiler's cost. Part 1: CPU-bound programs unprofiled and
-- under each mode at 10 ms, and mode C at the fastest rate this machine
-- gives (1 ms of wall-clock time; the CPU-time clock is tick-bound).
-- Part 2: the cost of one sample in mode C by stack depth (Lua frames, and
-- Lua frames called from C), measured in the sampled thread.
-- Part 3: the cost of starting and stopping a profile.
-- Usage: luajit bench/sysprof.lua LUAJIT WORKDIR [ROUNDS]
local harness = require("harness")

local luajit, work = arg[1], arg[2]
assert(luajit and work, "usage: sysprof.lua LUAJIT WORKDIR [ROUNDS]")
local rounds = tonumber(arg[3]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local runner = dir .. "/lib/sysprof_run.lua"
local out = work .. "/sysprof-bench.bin"
os.execute("mkdir -p " .. work)

local order = { "plain", "D", "L", "C", "C_1ms" }
local specs = { D = "D:10", L = "L:10", C = "C:10", C_1ms = "C:1:wall" }
local ratios = { { "D", "plain" }, { "L", "plain" }, { "C", "plain" }, { "C_1ms", "plain" } }

local rows = {}
-- Each program repeated to run about two seconds.
for _, p in ipairs({ { "cpu_fib", 10 }, { "cpu_mandel", 8 }, { "alloc_tree", 5 } }) do
  local cmd = luajit .. " " .. runner .. " " .. dir .. "/programs/" .. p[1] .. ".lua " .. p[2]
  local cmds = { plain = cmd }
  for name, spec in pairs(specs) do
    cmds[name] = "SYSPROF=" .. spec .. " SYSPROF_PATH=" .. out .. " " .. cmd
  end
  rows[#rows + 1] = { name = p[1] .. " ×" .. p[2], med = harness.compare(cmds, order, rounds) }
end
harness.table("Overhead: median wall time of " .. rounds .. " interleaved runs",
              order, ratios, rows)
os.remove(out)

-- Parts 2 and 3 run in the VM under test, with the probe module that
-- `make bench` builds (LUA_CPATH).
local probe = dir .. "/lib/sysprof_probe_run.lua"
local ljprof = luajit:gsub("luajit$", "ljprof")

-- The deepest stack of a stream, in frames.
local function deepest(path)
  local p = assert(io.popen(ljprof .. " report --format=collapsed " .. path))
  local max = 0
  for stack in p:lines() do
    local _, semis = stack:gsub(";", "")
    max = math.max(max, semis + 1)
  end
  p:close()
  return max
end

print("\n### Mode C: what one sample costs, by stack depth (JIT off)\n")
print("Median of 2000 deliveries of sysprof's signal to the sampled thread;")
print("walk = mode C - mode D (which pays the delivery and a count).\n")
print("| stack | frames in the sample | mode D (µs) | mode C (µs) | walk (µs) |")
print("| --- | ---: | ---: | ---: | ---: |")
for _, kind in ipairs({ "lua", "mixed" }) do
  for _, depth in ipairs({ 1, 10, 50, 200 }) do
    local p = assert(io.popen(table.concat({ luajit, probe, "sample", kind, depth, out }, " ")))
    local d, c = p:read("*a"):match("(%d+)%s+(%d+)")
    p:close()
    print(string.format("| %s %d | %d | %.1f | %.1f | %.1f |", kind, depth, deepest(out),
      d / 1e3, c / 1e3, (c - d) / 1e3))
  end
end

print("\n### Starting and stopping a profile (mode C, 21 pairs in one process)\n")
local p = assert(io.popen(table.concat({ luajit, probe, "start", 21, out }, " ")))
local first, start, stop = p:read("*a"):match("(%d+) (%d+) (%d+)")
p:close()
print("| first start (ms) | start, median (ms) | stop, median (ms) |")
print("| ---: | ---: | ---: |")
print(string.format("| %.2f | %.2f | %.2f |", first / 1e6, start / 1e6, stop / 1e6))
os.remove(out)
