-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- The JIT compiler at work: many distinct small loops (each a chunk of its
-- own, so each is recorded and assembled anew), with a call inlined and a
-- table read, run just long enough to be compiled.
local n = tonumber(arg and arg[1]) or 4000
local src = [[
local k = ...
local function scale(x) return x * k + 1 end
return function(t)
  local s = 0
  for i = 1, 200 do s = s + scale(i) + t[i % 8 + 1] end
  return s
end
]]
local t, sum = { 1, 2, 3, 4, 5, 6, 7, 8 }, 0
for i = 1, n do
  sum = sum + assert(load(src, "=loop" .. i))(i)(t)
end
assert(sum > 0)
