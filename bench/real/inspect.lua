-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A program the project did not write, in a loop: Debian's inspect.lua
-- (lua-inspect) renders nested tables as text, the way a server dumps a
-- request or a configuration to its log. Rendering is string.format("%q"),
-- string.gsub with a table of escapes, table.sort with a Lua comparator
-- (a fast function calling Lua), metatables and recursion.
-- Usage: luajit inspect.lua [SECONDS]
local inspect = require("inspect")

local words = { "route", "upstream", "tenant", "plugin\t", "header\n",
  "cookie\"", "path\\", "query", "body", "status", "latency", "bytes" }

local function request(seed)
  local r = { id = seed, headers = {}, route = { prefix = "/api/v" .. seed % 3,
    plugins = {} }, upstream = { host = "10.0.0." .. seed % 250,
    port = 8000 + seed % 7, weights = {} } }
  for i = 1, 24 do
    r.headers[words[(seed + i) % #words + 1] .. i] =
      words[(i * 5) % #words + 1] .. (seed * i)
  end
  for i = 1, 8 do
    r.route.plugins[i] = { name = words[(i + seed) % #words + 1],
      enabled = i % 3 ~= 0, config = { limit = i * 10, window = i / 4 } }
    r.upstream.weights[i] = (seed + i) % 11
  end
  r.route.parent = r  -- a cycle: inspect marks it <1>
  return setmetatable(r, { __name = "request" })
end

local seconds = tonumber(arg and arg[1]) or 2
local t0, rounds, bytes = os.clock(), 0, 0
while os.clock() - t0 < seconds do
  rounds = rounds + 1
  local text = inspect(request(rounds % 53), { depth = rounds % 2 == 0 and 3
                                                  or nil })
  assert(text:find("upstream", 1, true))
  bytes = bytes + #text
end
io.write(("%d rounds, %d bytes\n"):format(rounds, bytes))
