-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A small program that builds and drops some data, then prints what the
-- VM counted while it ran (misc.getmetrics()).
local function build(n)
  local t = {}
  for i = 1, n do t[i] = { id = i, name = "item" .. i } end
  return t
end

local before = misc.getmetrics()
for _ = 1, 20 do build(5000) end
collectgarbage()
local after = misc.getmetrics()

local names = {}
for k in pairs(after) do names[#names + 1] = k end
table.sort(names)
print(string.format("%-22s %14s %14s", "metric", "before", "after"))
for _, k in ipairs(names) do
  print(string.format("%-22s %14d %14d", k, before[k], after[k]))
end
