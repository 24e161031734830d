-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Runs a program, then prints one line about the traces alive at its end:
-- count, machine code bytes, map bytes (machine code to bytecode, kept for
-- the profilers), and the median of each trace's map/code ratio.
-- Usage: luajit traces_run.lua PROGRAM.lua [ARGS...]
local util = require("jit.util")
local prog = arg[1]
arg = { select(2, unpack(arg)) }
arg[0] = prog
dofile(prog)

local n, code, map, ratios = 0, 0, 0, {}
for tr = 1, 65535 do
  local info, mcode = util.traceinfo(tr), util.tracemc(tr)
  if info and mcode then  -- A trace without code of its own has no map.
    n, code, map = n + 1, code + #mcode, map + info.szlinemap
    ratios[#ratios + 1] = info.szlinemap / #mcode
  end
end
table.sort(ratios)
io.stderr:write(string.format("traces %d code %d map %d median %.3f\n",
  n, code, map, ratios[math.floor((#ratios + 1) / 2)] or 0))
