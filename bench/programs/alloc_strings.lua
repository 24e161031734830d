-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Allocation: string building (concatenation, formatting, table.concat).
local n = tonumber(arg and arg[1]) or 2000000
local parts, len = {}, 0
for i = 1, n do
  local s = "key" .. i .. ":" .. string.format("%08x", i * 2654435761 % 2^32)
  parts[#parts + 1] = s
  if #parts == 1000 then
    len = len + #table.concat(parts, ",")
    parts = {}
  end
end
assert(len > 0)
