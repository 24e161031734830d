-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Lines named by sysprof next to LuaJIT's own profiler (-jp=l), on
-- LuaJIT's bench programs with the JIT off: for each program, the share of
-- samples whose innermost Lua frame is each line, by both profilers, and
-- their similarity (the sum over lines of the smaller share: 1 when they
-- agree exactly). Also the share of samples at line 0 (a line no program
-- has) and with the line unknown, JIT off and on.
-- Usage: luajit bench/lines.lua LUAJIT LJPROF BENCHDIR WORKDIR
local luajit, ljprof, benchdir, work = arg[1], arg[2], arg[3], arg[4]
assert(work, "usage: lines.lua LUAJIT LJPROF BENCHDIR WORKDIR")
os.execute("mkdir -p " .. work)

local programs = require("ljbench")

local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function sh(cmd)
  local ok = os.execute(cmd)
  if ok ~= 0 and ok ~= true then error("command failed: " .. cmd) end
end

-- sysprof, mode C at 1 ms of wall-clock time: shares of innermost lines,
-- and the shares at line 0 and with the line unknown.
local function sysprof_lines(prog, a, jit)
  local bin, folded = work .. "/lines.bin", work .. "/lines.folded"
  sh(string.format("cd %s && %s %s -e \"assert(misc.sysprof.start({mode='C', " ..
    "interval=1, clock='wall', path='%s'}))\" %s.lua %s >/dev/null",
    benchdir, luajit, jit and "" or "-joff", bin, prog, a))
  sh(string.format("%s report --format=collapsed %s > %s", ljprof, bin, folded))
  local share, total, zero, unknown = {}, 0, 0, 0
  for stack, n in slurp(folded):gmatch("([^\n]*) (%d+)\n") do
    n = tonumber(n)
    total = total + n
    local inner  -- The innermost Lua frame: a chunk name and a line.
    for frame in stack:gmatch("[^;]+") do
      if frame:find(":%d+$") and not frame:find("^TRACE") then inner = frame end
    end
    if stack:find(":0;", 1, true) or stack:find(":0$") then zero = zero + n end
    if stack:find("(line ?)", 1, true) then unknown = unknown + n end
    if inner then
      -- As -jp names chunks: files and =names bare, strings "[string]".
      local line = inner:match("^[@=](.*)$") or inner:gsub("^.*(:%d+)$", "[string]%1")
      share[line] = (share[line] or 0) + n
    end
  end
  for k, v in pairs(share) do share[k] = v / total end
  return share, total, zero / total, unknown / total
end

-- jit.p at line level, 1 ms, every line listed.
local function jitp_lines(prog, a)
  local out = work .. "/jitp.txt"
  sh(string.format("cd %s && %s -joff -jp=lm0i1,%s %s.lua %s >/dev/null",
    benchdir, luajit, out, prog, a))
  local share = {}
  for pct, line in slurp(out):gmatch("(%d+)%%%s+([^\n]-:%d+)\n") do
    share[line] = (share[line] or 0) + tonumber(pct) / 100
  end
  return share
end

-- LINES_DETAIL=program prints both profiles of that program line by line.
local function detail(prog, ours, theirs)
  if os.getenv("LINES_DETAIL") ~= prog then return end
  local keys, seen = {}, {}
  for _, t in ipairs({ ours, theirs }) do
    for k in pairs(t) do if not seen[k] then seen[k] = true; keys[#keys + 1] = k end end
  end
  table.sort(keys, function(x, y) return (ours[x] or 0) + (theirs[x] or 0) > (ours[y] or 0) + (theirs[y] or 0) end)
  for i = 1, math.min(12, #keys) do
    io.stderr:write(string.format("%-40s sysprof %5.1f%%  -jp %5.1f%%\n", keys[i],
      100 * (ours[keys[i]] or 0), 100 * (theirs[keys[i]] or 0)))
  end
end

local function similarity(a, b)
  local s = 0
  for k, v in pairs(a) do s = s + math.min(v, b[k] or 0) end
  return s
end

local function top(share)
  local keys = {}
  for k in pairs(share) do keys[#keys + 1] = k end
  table.sort(keys, function(x, y) return share[x] > share[y] end)
  local parts = {}
  for i = 1, math.min(2, #keys) do
    parts[#parts + 1] = string.format("%s %.0f%%", keys[i], 100 * share[keys[i]])
  end
  return table.concat(parts, ", ")
end

print("\n### Lines: sysprof (mode C, 1 ms wall) against -jp=l, JIT off\n")
print("| program | samples | similarity | sysprof's top lines | -jp=l's top lines | line 0 off / on | unknown off / on |")
print("|---|---:|---:|---|---|---:|---:|")
for _, p in ipairs(programs) do
  local ours, n, zero_off, unk_off = sysprof_lines(p[1], p[2], false)
  local _, _, zero_on, unk_on = sysprof_lines(p[1], p[2], true)
  local theirs = jitp_lines(p[1], p[2])
  detail(p[1], ours, theirs)
  print(string.format("| %s %s | %d | %.2f | %s | %s | %.1f %% / %.1f %% | %.1f %% / %.1f %% |",
    p[1], tostring(p[2]), n, similarity(ours, theirs), top(ours), top(theirs),
    100 * zero_off, 100 * zero_on, 100 * unk_off, 100 * unk_on))
end
os.remove(work .. "/lines.bin")
os.remove(work .. "/lines.folded")
os.remove(work .. "/jitp.txt")
