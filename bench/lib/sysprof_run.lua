-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Runs a bench program REPEAT times, under sysprof when SYSPROF gives
-- "MODE:MS[:wall]" and SYSPROF_PATH the output file.
-- Usage: luajit sysprof_run.lua PROGRAM.lua [REPEAT]
local spec = os.getenv("SYSPROF")
if spec then
  local mode, ms, clock = spec:match("^(%a):([%d.]+):?(%a*)$")
  assert(misc.sysprof.start({ mode = mode, interval = tonumber(ms),
    clock = clock ~= "" and clock or "cpu", path = os.getenv("SYSPROF_PATH") }))
end
for _ = 1, tonumber(arg[2]) or 1 do dofile(arg[1]) end
if spec then assert(misc.sysprof.stop()) end
