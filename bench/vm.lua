-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Our luajit against the same upstream tree built like ours but unpatched:
-- with no profiler running, our patches must cost nothing measurable.
-- (Debian's own luajit is no column: its library conflicts with the
-- libluajit2 that nginx's Lua module, which the tests run, depends on.)
-- Usage: luajit bench/vm.lua OUR_LUAJIT UNPATCHED_LUAJIT [ROUNDS]
local harness = require("harness")

local ours, upstream = arg[1], arg[2]
assert(ours and upstream, "usage: vm.lua OUR_LUAJIT UNPATCHED_LUAJIT [ROUNDS]")
local rounds = tonumber(arg[3]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."

local programs = { "cpu_fib", "cpu_mandel", "alloc_tree", "alloc_strings", "alloc_churn" }
local order = { "upstream", "ljprof" }
local ratios = { { "ljprof", "upstream" } }

for _, mode in ipairs({ { "JIT on", "" }, { "JIT off", "-joff " } }) do
  local rows = {}
  for _, p in ipairs(programs) do
    local script = dir .. "/programs/" .. p .. ".lua"
    rows[#rows + 1] = { name = p, med = harness.compare({
      upstream = upstream .. " " .. mode[2] .. script,
      ljprof = ours .. " " .. mode[2] .. script,
    }, order, rounds) }
  end
  harness.table(mode[1] .. ": median wall time of " .. rounds ..
                " interleaved runs", order, ratios, rows)
end
