-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- What a heap snapshot at the end costs a run, and the join's reader.
--  1. LJPROF='heap:end=script': the return hook that finds the end of the
--     script (every return the interpreter makes calls it) against no
--     LJPROF, JIT on and off; the snapshot itself goes to /dev/null.
--  2. ljprof record --mem --stacks with and without --heap, on the demo.
--  3. ljprof heap with and without --memprof on the demo's snapshot: the
--     replay of the stream to the mark, and the reader's peak memory.
-- Usage: luajit bench/heapjoin.lua LUAJIT LJPROF WORKDIR [ROUNDS]
local harness = require("harness")

local luajit, ljprof, work = arg[1], arg[2], arg[3]
assert(luajit and ljprof and work, "usage: heapjoin.lua LUAJIT LJPROF WORKDIR [ROUNDS]")
local rounds = tonumber(arg[4]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local demo = dir .. "/../examples/cache.lua"
os.execute("mkdir -p " .. work)

local hook = "LJPROF='heap:end=script,path=/dev/null' "
for _, mode in ipairs({ { "JIT on", "" }, { "JIT off", "-joff " } }) do
  local rows = {}
  for _, p in ipairs({ "cpu_fib", "alloc_tree", "alloc_churn" }) do
    local cmd = luajit .. " " .. mode[2] .. dir .. "/programs/" .. p .. ".lua"
    rows[#rows + 1] = { name = p, med = harness.compare(
      { plain = cmd, hook = hook .. cmd }, { "plain", "hook" }, rounds) }
  end
  harness.table("The end's return hook, " .. mode[1], { "plain", "hook" },
                { { "hook", "plain" } }, rows)
end

local mem = work .. "/heapjoin-demo.mem"
local rec = ljprof .. " record --mem --stacks --report-out=/dev/null -o " .. mem
local med = harness.compare({
  stacks = rec .. " -- " .. demo,
  heap = rec .. " --heap -- " .. demo,
}, { "stacks", "heap" }, rounds)
harness.table("record --mem --stacks, and with --heap (the demo, 50000 requests)",
              { "stacks", "heap" }, { { "heap", "stacks" } },
              { { name = "cache.lua", med = med } })

local snap = mem .. ".heap"
med = harness.compare({
  heap = ljprof .. " heap " .. snap,
  joined = ljprof .. " heap --memprof=" .. mem .. " " .. snap,
}, { "heap", "joined" }, rounds)
harness.table("ljprof heap, and joined to the memory profile", { "heap", "joined" },
              { { "joined", "heap" } }, { { name = "cache.lua", med = med } })
for _, opt in ipairs({ "", "--memprof=" .. mem .. " " }) do
  local out = harness.capture("/usr/bin/time -f '%M' " .. ljprof .. " heap " .. opt
                              .. snap .. " 2>&1 >/dev/null")
  print(string.format("peak RSS, ljprof heap %s: %s KiB", opt, out:match("(%d+)%s*$")))
end
local f = assert(io.open(mem, "rb"))
print(string.format("memprof stream: %.1f MB", f:seek("end") / 1e6))
f:close()
