-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Side-by-side timing of commands: runs are interleaved (A, B, A, B, ...)
-- so both see the same machine, and the median wall time of each is kept.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } ljprof_timespec;
int clock_gettime(int clk, ljprof_timespec *ts);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("ljprof_timespec")

local harness = {}

local function now()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) * 1e-9
end

local function run(cmd)
  local t0 = now()
  local ok = os.execute(cmd .. " >/dev/null")
  local t = now() - t0
  if ok ~= 0 and ok ~= true then error("command failed: " .. cmd) end
  return t
end

-- The standard output of a command.
function harness.capture(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

local function median(xs)
  table.sort(xs)
  local n = #xs
  if n % 2 == 1 then return xs[(n + 1) / 2] end
  return (xs[n / 2] + xs[n / 2 + 1]) / 2
end

-- compare({base = cmd, other = cmd, ...}, rounds) -> {name = median seconds}
function harness.compare(cmds, order, rounds)
  local times = {}
  for _, name in ipairs(order) do times[name] = {} end
  run(cmds[order[1]])  -- warm the file cache
  for _ = 1, rounds do
    for _, name in ipairs(order) do
      local list = times[name]
      list[#list + 1] = run(cmds[name])
    end
  end
  local med = {}
  for name, list in pairs(times) do med[name] = median(list) end
  return med
end

-- Print a Markdown table: one row per case, one column per variant, then
-- one column per ratio {a, b} (time of a / time of b).
function harness.table(title, order, ratios, rows)
  print("\n### " .. title .. "\n")
  local head, rule = { "program" }, { "---" }
  for _, name in ipairs(order) do head[#head + 1] = name .. " (s)"; rule[#rule + 1] = "---:" end
  for _, r in ipairs(ratios) do head[#head + 1] = r[1] .. " / " .. r[2]; rule[#rule + 1] = "---:" end
  print("| " .. table.concat(head, " | ") .. " |")
  print("| " .. table.concat(rule, " | ") .. " |")
  for _, row in ipairs(rows) do
    local cells = { row.name }
    for _, name in ipairs(order) do cells[#cells + 1] = string.format("%.3f", row.med[name]) end
    for _, r in ipairs(ratios) do
      cells[#cells + 1] = string.format("%.3f", row.med[r[1]] / row.med[r[2]])
    end
    print("| " .. table.concat(cells, " | ") .. " |")
  end
end

return harness
