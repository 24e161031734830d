-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Allocation: table churn (short-lived records, growing and shrinking maps).
local n = tonumber(arg and arg[1]) or 10000000
local live, sum = {}, 0
for i = 1, n do
  local r = { id = i, x = i * 0.5, tag = i % 17 }
  live[i % 4096] = r
  sum = sum + r.tag
  if i % 100000 == 0 then live = {} end
end
assert(sum > 0)
