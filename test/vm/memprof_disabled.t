#!/usr/bin/env luajit
-- A VM built with LUAJIT_DISABLE_MEMPROF says so, and nothing else breaks.
local t = require("tap")
local exe = os.getenv("LJPROF_BUILD_DIR") .. "/nomemprof/bin/luajit"

local p = assert(io.popen(exe .. [[ -e '
local mp = misc.memprof
print(tostring(mp.available))
print(mp.start("/tmp/never.bin"))
print(mp.stop())
print(misc.getmetrics().gc_tabnum > 0)
']] .. " 2>&1"))
local out = p:read("*a")
p:close()
local lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end

t.is(lines[1], "false", "misc.memprof.available is false")
t.is(lines[2], "nil\tprofiler is disabled\t95", "start: nil, 'profiler is disabled', ENOTSUP")
t.is(lines[3], "nil\tprofiler is disabled\t95", "stop: the same")
t.is(lines[4], "true", "the rest of misc works")
t.ok(io.open("/tmp/never.bin") == nil, "no file was created")
t.done()
