-- The platform profiler's cost. Part 1: CPU-bound programs unprofiled and
-- under each mode at 10 ms, and mode C at the fastest rate this machine
-- gives (1 ms of wall-clock time; the CPU-time clock is tick-bound).
-- Part 2: the cost of one sample in mode C by Lua stack depth, measured in
-- one process: the same work with and without sampling, the difference
-- divided by the samples taken.
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

-- Part 2 runs in the VM under test, in one process.
local probe = [[
local depth, path = tonumber(arg[1]), arg[2]
local function spin(n) local x = 0 for i = 1, n do x = x + i % 7 end return x end
local function nest(d, n) if d <= 1 then return spin(n) end return nest(d - 1, n) + 0 end
local function run() for _ = 1, 300 do nest(depth, 100000) end end
jit.off()
local function cpu() return os.clock() end
local plain, prof, samples = 0, 0, 0
for _ = 1, 3 do
  local t = cpu(); run(); plain = plain + cpu() - t
  assert(misc.sysprof.start({ mode = "C", interval = 1, clock = "wall", path = path }))
  t = cpu(); run(); prof = prof + cpu() - t
  samples = samples + misc.sysprof.report().samples
  assert(misc.sysprof.stop())
end
print(string.format("%d %.3f %.3f %d", depth, plain, prof, samples))
]]
local f = assert(io.open(work .. "/sysprof-probe.lua", "w"))
f:write(probe)
f:close()
print("\n### Mode C, 1 ms wall clock: cost of one sample by Lua stack depth (JIT off)\n")
print("| Lua frames | unprofiled (s) | profiled (s) | samples | µs per sample |")
print("| ---: | ---: | ---: | ---: | ---: |")
for _, depth in ipairs({ 1, 10, 50, 100, 200 }) do
  local p = assert(io.popen(luajit .. " " .. work .. "/sysprof-probe.lua " .. depth .. " " .. out))
  local d, plain, prof, samples = p:read("*a"):match("(%d+) ([%d.]+) ([%d.]+) (%d+)")
  p:close()
  print(string.format("| %d | %.3f | %.3f | %d | %.1f |", d, plain, prof, samples,
    (prof - plain) / samples * 1e6))
end
os.remove(out)
