-- Runs a bench program under memprof when MEMPROF names the output file.
-- Usage: luajit memprof_run.lua PROGRAM.lua
local path = os.getenv("MEMPROF")
if path then assert(misc.memprof.start(path)) end
dofile(arg[1])
if path then assert(misc.memprof.stop()) end
