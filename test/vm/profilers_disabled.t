#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A VM built with LUAJIT_DISABLE_MEMPROF and LUAJIT_DISABLE_SYSPROF says
-- so, in the reference's words (a misuse), and nothing else breaks.
local t = require("tap")
local exe = os.getenv("LJPROF_BUILD_DIR") .. "/noprof/bin/luajit"

local p = assert(io.popen(exe .. [[ -e '
for _, name in ipairs({"memprof", "sysprof"}) do
  local prof = misc[name]
  print(tostring(prof.available))
  print(prof.start(name == "memprof" and "/tmp/never.bin" or {path = "/tmp/never.bin"}))
  print(prof.stop())
end
print(misc.sysprof.report())
print(misc.getmetrics().gc_tabnum > 0)
']] .. " 2>&1"))
local out = p:read("*a")
p:close()
local lines = {}
for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end

local misuse = "profiler misuse: profiler is disabled in this build"
for i, name in ipairs({ "memprof", "sysprof" }) do
  local at = (i - 1) * 3
  t.is(lines[at + 1], "false", "misc." .. name .. ".available is false")
  t.is(lines[at + 2], "nil\t" .. misuse .. "\t22", name .. ".start: nil, 'profiler misuse: ...', EINVAL")
  t.is(lines[at + 3], "nil\t" .. misuse .. "\t22", name .. ".stop: the same")
end
t.is(lines[7], "nil\t" .. misuse .. "\t22", "sysprof.report(): the same")
t.is(lines[8], "true", "the rest of misc works")
t.ok(io.open("/tmp/never.bin") == nil, "no file was created")
t.done()
