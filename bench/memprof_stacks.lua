-- The cost of memprof's call stacks and of its sampled mode (stream v5):
-- each allocation-heavy program plain, under memprof v4 (no stacks), with
-- a stack on every event, and sampled at 512 KiB, the stream going to
-- /dev/null; JIT on and off. Plus the sampled stream's size per second.
-- Usage: luajit bench/memprof_stacks.lua LUAJIT WORKDIR [ROUNDS]
local harness = require("harness")

local luajit, work = arg[1], arg[2]
assert(luajit and work, "usage: memprof_stacks.lua LUAJIT WORKDIR [ROUNDS]")
local rounds = tonumber(arg[3]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local runner = dir .. "/lib/memprof_run.lua"
local file = work .. "/memprof-sampled.bin"

local programs = { "alloc_churn", "alloc_tree", "alloc_strings" }
local order = { "plain", "v4", "stacks", "sampled" }
local ratios = { { "v4", "plain" }, { "stacks", "plain" }, { "stacks", "v4" },
                 { "sampled", "plain" } }

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
      v4 = "MEMPROF=/dev/null MEMPROF_FORMAT=v4 " .. cmd,
      stacks = "MEMPROF=/dev/null MEMPROF_STACKS=1 " .. cmd,
      sampled = "MEMPROF=/dev/null MEMPROF_SAMPLE=524288 " .. cmd,
    }, order, rounds) }
    local t = harness.compare({ sampled_disk = "rm -f " .. file .. " && MEMPROF=" ..
                                file .. " MEMPROF_SAMPLE=524288 " .. cmd },
                              { "sampled_disk" }, 1).sampled_disk
    streams[#streams + 1] = string.format("| %s | %.1f | %.2f |", p,
      filesize(file) / 1e3, filesize(file) / 1e6 / t)
    os.remove(file)
  end
  harness.table(mode[1] .. ": median wall time of " .. rounds ..
                " interleaved runs", order, ratios, rows)
  print("\n| program | sampled stream KB | MB per second |")
  print("| --- | ---: | ---: |")
  print(table.concat(streams, "\n"))
end
