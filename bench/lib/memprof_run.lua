-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Runs a bench program under memprof when MEMPROF names the output file,
-- in the stream format MEMPROF_FORMAT ("v3", the default, or "v4"); with
-- MEMPROF_STACKS=1 every event carries its call stack (MEMPROF_NATIVE=1:
-- with its native frames), with MEMPROF_SAMPLE=BYTES allocations are
-- sampled (all stream v5).
-- Usage: luajit memprof_run.lua PROGRAM.lua
local path = os.getenv("MEMPROF")
if path then
  local sample = tonumber(os.getenv("MEMPROF_SAMPLE"))
  local stacks = os.getenv("MEMPROF_STACKS") == "1"
  local native = os.getenv("MEMPROF_NATIVE") == "1"
  assert(misc.memprof.start({ path = path, stacks = stacks or nil, sample = sample,
    native = native or nil,
    format = (stacks or native or sample) and "v5" or os.getenv("MEMPROF_FORMAT") or "v3" }))
end
dofile(arg[1])
if path then assert(misc.memprof.stop()) end
