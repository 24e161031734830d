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
-- Usage: luajit bench/labels_cost.lua LUAJIT WORKDIR [N]
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
