-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- The memory profiler's cost: each allocation-heavy program unprofiled and
-- profiled, the stream going to a file on disk (v3, and v4 with lines in
-- traces) and to /dev/null, with a call stack on every event and sampled
-- at 512 KiB (v5, to /dev/null), both also with native frames in the
-- stacks, JIT on and off; plus the stream's size,
-- events, bytes per event and MB/s (of the last disk run, v4).
-- Usage: luajit bench/memprof.lua LUAJIT LJPROF WORKDIR [ROUNDS]
local harness = require("harness")

local luajit, ljprof, work = arg[1], arg[2], arg[3]
assert(luajit and ljprof and work, "usage: memprof.lua LUAJIT LJPROF WORKDIR [ROUNDS]")
local rounds = tonumber(arg[4]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local runner = dir .. "/lib/memprof_run.lua"
local file = work .. "/memprof-bench.bin"

local programs = { "alloc_tree", "alloc_strings", "alloc_churn", "alloc_deep" }
local order = { "plain", "devnull", "disk", "disk_v4", "stacks", "sampled", "native",
                "native_sampled" }
local ratios = { { "devnull", "plain" }, { "disk", "plain" }, { "disk_v4", "plain" },
                 { "stacks", "plain" }, { "sampled", "plain" }, { "native", "plain" },
                 { "native_sampled", "plain" } }

-- Events in a stream, from ljprof's JSON totals.
local function events(path)
  local p = assert(io.popen(ljprof .. " report --format=json " .. path))
  local json = p:read("*a")
  p:close()
  local n = 0
  for _, k in ipairs({ "alloc_events", "realloc_events", "free_events" }) do
    n = n + tonumber(json:match('"totals".-"' .. k .. '": (%d+)'))
  end
  return n
end

local function filesize(path)
  local f = assert(io.open(path, "rb"))
  local n = f:seek("end")
  f:close()
  return n
end

os.execute("mkdir -p " .. work)
for _, mode in ipairs({ { "JIT on", "" }, { "JIT off", "-joff " } }) do
  local rows, streams = {}, {}
  for _, p in ipairs(programs) do
    local cmd = luajit .. " " .. mode[2] .. runner .. " " .. dir .. "/programs/" .. p .. ".lua"
    rows[#rows + 1] = { name = p, med = harness.compare({
      plain = cmd,
      devnull = "MEMPROF=/dev/null " .. cmd,
      -- A new file each run: no run pays for the last one's writeback.
      disk = "rm -f " .. file .. " && MEMPROF=" .. file .. " " .. cmd,
      -- Stream v4: allocations in traces charged to their lines.
      disk_v4 = "rm -f " .. file .. " && MEMPROF_FORMAT=v4 MEMPROF=" .. file .. " " .. cmd,
      -- Stream v5: a call stack on every event; sampled at 512 KiB.
      stacks = "MEMPROF=/dev/null MEMPROF_STACKS=1 " .. cmd,
      sampled = "MEMPROF=/dev/null MEMPROF_SAMPLE=524288 " .. cmd,
      -- The same with native frames in the stacks.
      native = "MEMPROF=/dev/null MEMPROF_NATIVE=1 " .. cmd,
      native_sampled = "MEMPROF=/dev/null MEMPROF_NATIVE=1 MEMPROF_SAMPLE=524288 " .. cmd,
    }, order, rounds) }
    local size, n = filesize(file), events(file)
    streams[#streams + 1] = string.format("| %s | %.1f | %.2f | %.2f | %.0f |", p,
      size / 1e6, n / 1e6, size / n, size / 1e6 / rows[#rows].med.disk)
    os.remove(file)
  end
  harness.table(mode[1] .. ": median wall time of " .. rounds ..
                " interleaved runs", order, ratios, rows)
  print("\n| program | stream MB | events (M) | bytes/event | stream MB/s (disk run) |")
  print("| --- | ---: | ---: | ---: | ---: |")
  print(table.concat(streams, "\n"))
end
