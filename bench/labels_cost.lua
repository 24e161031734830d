-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- What a label switch costs (misc.label), in instructions counted by
-- callgrind: a loop of N rounds and one of 2N, the difference divided by N
-- and by the switches a round makes, less the same loop without them
-- (what a round costs anyway). JIT on and off. Cases:
--   object   p = label(set); label(p): two switches to known sets
--   table    p = label({two labels}); label(p): the table interned anew
--            (found: the same labels each round), then a restore
--   call     label(set, fn): a switch, fn's call, a switch back
--   object, interpreted   the object case in code the JIT does not
--            compile, in a VM whose JIT is on (misc.label chose the FFI's
--            switch at its first call): what a switch costs in a trace
--            that aborts
-- No profile runs: what labels cost a program that sets them.
-- Then what labels add to a profile (JIT on): memprof with stacks, and
-- sampled at every byte (each allocation a sampled event), v6 against v5
-- per allocation, under one set ("same") or switching between two at
-- each allocation ("switch"); sysprof's handler per sample (mode C, 1 ms),
-- v4 against v3 under one set, and its switch (lj_proflabel_switch) per
-- call under two sets switched at each round.
-- Usage: luajit bench/labels_cost.lua LUAJIT WORKDIR [N]
local callgrind = require("callgrind")
local luajit, work, n = arg[1], arg[2], tonumber(arg[3] or 200000)
assert(luajit and work, "usage: labels_cost.lua LUAJIT WORKDIR [N]")
os.execute("mkdir -p " .. work)

local prog = work .. "/labels_case.lua"
local f = assert(io.open(prog, "w"))
f:write([[
local case, n = arg[1], tonumber(arg[2])
local label = misc.label
local set = label(label({ route = "/api", plugin = "auth" }))
local t = { route = "/api", plugin = "auth" }
local x = 0
local function fn(i) x = x + i end
if case == "none" then
  for i = 1, n do fn(i) end
elseif case == "object" then
  for i = 1, n do local p = label(set); fn(i); label(p) end
elseif case == "interp" then
  jit.off()
  for i = 1, n do local p = label(set); fn(i); label(p) end
elseif case == "table" then
  for i = 1, n do local p = label(t); fn(i); label(p) end
elseif case == "call" then
  for i = 1, n do label(set, fn, i) end
end
assert(next(label()) == nil)
]])
f:close()

local function instructions(jit, case, rounds)
  local cmd = ("valgrind --tool=callgrind --smc-check=all-non-file " ..
               "--callgrind-out-file=/dev/null %s %s %s %s %d 2>&1"):format(
               luajit, jit and "" or "-joff", prog, case, rounds)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  local c = out:match("Collected : ([%d,]+)")
  assert(c, "no callgrind count: " .. out:sub(-300))
  return tonumber((c:gsub(",", "")))
end

local function per_round(jit, case)
  return (instructions(jit, case, 2 * n) - instructions(jit, case, n)) / n
end

print(("| case | JIT | instructions per switch | per round | rounds %d |"):format(n))
print("|---|---|---|---|---|")
for _, jit in ipairs({ true, false }) do
  local base = per_round(jit, "none")
  local cases = { "object", "table", "call" }
  if jit then cases[#cases + 1] = "interp" end
  for _, c in ipairs(cases) do
    -- The interpreted case's loop runs interpreted: so does its base.
    local r = per_round(jit, c) - (c == "interp" and per_round(false, "none") or base)
    print(("| %s | %s | %.0f | %.0f | |"):format(
      c == "interp" and "object, interpreted" or c, jit and "on" or "off", r / 2, r))
  end
end

-- With a profile running.
local prof = work .. "/labels_prof.lua"
f = assert(io.open(prof, "w"))
f:write([[
local what, fmt, case, n = arg[1], arg[2], arg[3], tonumber(arg[4])
local label = misc.label
local A = label(label({ route = "/api", plugin = "auth" }))
local B = label(label({ route = "/web" }))
local keep, x = {}, 0
if what == "mem" or what == "sampled" then
  assert(misc.memprof.start({ path = "/dev/null", stacks = true,
                              format = fmt,
                              sample = what == "sampled" and 1 or nil }))
  label(A)
  for i = 1, n do
    if case == "switch" then label(i % 2 == 0 and A or B) end
    keep[i % 1024] = { i }
  end
  misc.memprof.stop()
else
  label(A)
  assert(misc.sysprof.start({ mode = "C", interval = 1, path = "/dev/null",
                              format = fmt }))
  for i = 1, n do
    if case == "switch" then label(i % 2 == 0 and A or B) end
    for j = 1, 100 do x = x + j % 7 end
  end
  misc.sysprof.stop()
end
]])
f:close()

local function count(what, fmt, case, rounds, fns)
  return assert(callgrind.count("", ("%s %s %s %s %s %d"):format(luajit, prof,
                what, fmt, case, rounds), fns, work .. "/cg.labels"),
                "no callgrind count")
end

local function mem_round(what, fmt, case)
  return (count(what, fmt, case, 2 * n).total -
          count(what, fmt, case, n).total) / n
end

print("\n| profile | labels | v5 / v3 instructions | v6 / v4 | labels add |")
print("|---|---|---:|---:|---:|")
for _, what in ipairs({ "mem", "sampled" }) do
  for _, case in ipairs({ "same", "switch" }) do
    local old, new = mem_round(what, "v5", case), mem_round(what, "v6", case)
    print(("| memprof %s, an allocation | %s | %.0f | %.0f | %.0f |"):format(
      what == "mem" and "stacks" or "sampled", case, old, new, new - old))
  end
end
-- A signal handler has no caller for callgrind: its samples are counted
-- by the walk it calls once each.
local per, rounds = {}, 5 * n
for _, fmt in ipairs({ "v3", "v4" }) do
  local r = count("cpu", fmt, "same", rounds,
                  { "sysprof_signal", "lj_profwalk_state" })
  per[fmt] = r.ir.sysprof_signal / math.max(r.calls.lj_profwalk_state, 1)
end
print(("| sysprof mode C, a sample | same | %.0f | %.0f | %.0f |"):format(
  per.v3, per.v4, per.v4 - per.v3))
local r = count("cpu", "v4", "switch", rounds,
                { "lj_profwalk_state", "lj_proflabel_switch",
                  "lj_proflabel_taken" })
print(("| sysprof, a switch (%d of %d samples) | switch | | %.0f | |"):format(
  r.calls.lj_proflabel_switch, r.calls.lj_profwalk_state,
  (r.ir.lj_proflabel_switch + r.ir.lj_proflabel_taken) /
  math.max(r.calls.lj_proflabel_switch, 1)))
