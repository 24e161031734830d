-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Allocation: small records made 60 frames deep, by a helper called and
-- returning at each one (a call stack as deep as a framework's).
local function record(i) return { i, i + 1 } end
local function work(n)
  local s = 0
  for i = 1, n do s = s + #record(i) end
  return s
end
local function descend(d, n)
  if d > 0 then
    local r = descend(d - 1, n)
    return r
  end
  return work(n)
end
local n = tonumber(arg and arg[1]) or 4000000
assert(descend(60, n) == 2 * n)
