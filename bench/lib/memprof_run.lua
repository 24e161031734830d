-- Runs a bench program under memprof when MEMPROF names the output file,
-- in the stream format MEMPROF_FORMAT ("v3", the default, or "v4"); with
-- MEMPROF_STACKS=1 every event carries its call stack, with
-- MEMPROF_SAMPLE=BYTES allocations are sampled (both stream v5).
-- Usage: luajit memprof_run.lua PROGRAM.lua
local path = os.getenv("MEMPROF")
if path then
  local sample = tonumber(os.getenv("MEMPROF_SAMPLE"))
  local stacks = os.getenv("MEMPROF_STACKS") == "1"
  assert(misc.memprof.start({ path = path, stacks = stacks or nil, sample = sample,
    format = (stacks or sample) and "v5" or os.getenv("MEMPROF_FORMAT") or "v3" }))
end
dofile(arg[1])
if path then assert(misc.memprof.stop()) end
