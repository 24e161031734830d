-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A small program with a memory problem, a cache never trimmed: `make demo`
-- records it and shows where memory goes, and what is still held at the end.
local cache = {}

local function render(id)
  -- Builds a page: many short-lived strings, one kept.
  local parts = {}
  for i = 1, 20 do
    parts[#parts + 1] = string.format("<li>item %d of %d</li>", i, id)
  end
  return table.concat(parts, "\n")
end

local function handle(id)
  local page = render(id)
  cache[id] = { page = page, hits = 0 }   -- the leak: never evicted
  return #page
end

local requests = tonumber(arg and arg[1]) or 50000
local total = 0
for id = 1, requests do
  total = total + handle(id)
  if id % 5000 == 0 then collectgarbage() end
end
print(string.format("served %d pages, %d bytes", requests, total))
