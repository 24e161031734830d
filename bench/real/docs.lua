-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A program the project did not write, in a loop: Debian's dkjson and
-- markdown.lua (lua-dkjson, lua-markdown) render generated documents.
-- Each round builds a document (headings, lists, code, links, emphasis),
-- renders it to HTML, encodes it and its outline as JSON and decodes that
-- again. Usage: luajit docs.lua [SECONDS]
local json = require("dkjson")
local markdown = require("markdown")

local words = { "trace", "profile", "sample", "frame", "line", "exit",
  "snapshot", "record", "compile", "stack", "native", "table", "string" }

local function sentence(seed, n)
  local out = {}
  for i = 1, n do
    local w = words[(seed * 7 + i * 13) % #words + 1]
    if i % 9 == 0 then w = "*" .. w .. "*" end
    if i % 11 == 0 then w = "`" .. w .. "()`" end
    if i % 17 == 0 then w = "[" .. w .. "](http://example.org/" .. w .. ")" end
    out[i] = w
  end
  return table.concat(out, " ") .. "."
end

local function document(seed)
  local out = { "# Document " .. seed, "" }
  for s = 1, 6 do
    out[#out + 1] = "## Section " .. s
    out[#out + 1] = ""
    out[#out + 1] = sentence(seed + s, 40 + s * 5)
    out[#out + 1] = ""
    for i = 1, 5 do out[#out + 1] = "- " .. sentence(seed + i, 8) end
    out[#out + 1] = ""
    out[#out + 1] = "    local x = " .. s .. " -- code"
    out[#out + 1] = ""
    out[#out + 1] = "> " .. sentence(seed * s, 12)
    out[#out + 1] = ""
  end
  return table.concat(out, "\n")
end

local seconds = tonumber(arg and arg[1]) or 2
local t0, rounds, bytes = os.clock(), 0, 0
while os.clock() - t0 < seconds do
  rounds = rounds + 1
  local md = document(rounds % 50)
  local html = markdown(md)
  local outline = {}
  for h in md:gmatch("\n## ([^\n]+)") do outline[#outline + 1] = h end
  local text = json.encode({ round = rounds, html = html, outline = outline,
    sizes = { md = #md, html = #html } }, { indent = rounds % 2 == 0 })
  local back = assert(json.decode(text))
  assert(back.round == rounds and #back.outline == 6)
  bytes = bytes + #text
end
io.write(("%d rounds, %d bytes of JSON\n"):format(rounds, bytes))
