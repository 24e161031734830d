-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Allocation: binary trees built and dropped (many small tables).
local function make(d)
  if d == 0 then return {} end
  return { make(d - 1), make(d - 1) }
end
local function check(t)
  if not t[1] then return 1 end
  return 1 + check(t[1]) + check(t[2])
end
local depth = tonumber(arg and arg[1]) or 18
local total = 0
for _ = 1, 8 do total = total + check(make(depth)) end
assert(total > 0)
