-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A program the project did not write, in a loop: Debian's dkjson decodes
-- and encodes documents (lua-dkjson), markdown.lua renders a few of their
-- texts (lua-markdown). Decoding is most of the time: string.find with
-- patterns (stitched traces), tail calls between the scanner's functions.
-- Usage: luajit json.lua [SECONDS]
local json = require("dkjson")
local markdown = require("markdown")

local words = { "trace", "profile", "sample", "frame", "line", "exit",
  "snap\"shot", "rec\\ord", "comp\nile", "stack", "native", "table",
  "string" }

local function doc(seed)
  local t = { id = seed, items = {}, text = {} }
  for i = 1, 60 do
    t.items[i] = { name = words[(seed + i) % #words + 1] .. i,
      value = i * 1.5, ok = i % 2 == 0,
      tags = { words[i % #words + 1], words[(i * 3) % #words + 1] } }
  end
  for i = 1, 20 do
    t.text[i] = "*" .. words[(i * 7) % #words + 1] .. "* and `code` " .. i
  end
  return t
end

local seconds = tonumber(arg and arg[1]) or 2
local t0, rounds = os.clock(), 0
while os.clock() - t0 < seconds do
  rounds = rounds + 1
  local d = doc(rounds % 37)
  local text = json.encode(d, { indent = rounds % 2 == 0 })
  for _ = 1, 3 do
    local back = assert(json.decode(text))
    assert(#back.items == 60 and back.id == d.id)
  end
  if rounds % 4 == 0 then markdown(table.concat(d.text, "\n\n")) end
end
io.write(("%d rounds\n"):format(rounds))
