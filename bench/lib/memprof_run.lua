-- Runs a bench program under memprof when MEMPROF names the output file,
-- in the stream format MEMPROF_FORMAT ("v3", the default, or "v4").
-- Usage: luajit memprof_run.lua PROGRAM.lua
local path = os.getenv("MEMPROF")
if path then
  assert(misc.memprof.start({ path = path, format = os.getenv("MEMPROF_FORMAT") or "v3" }))
end
dofile(arg[1])
if path then assert(misc.memprof.stop()) end
