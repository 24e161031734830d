#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- misc.memprof from Lua: results and errors as documented (true, or nil,
-- message, errno), a failing writer that stops the profile and not the
-- program, and a stream that is complete whatever ends it.
local t = require("tap")
local mp = misc.memprof
local tmp = os.tmpname()

local EINVAL, ENOENT, ENOSPC = 22, 2, 28

-- triple(name, message pattern, errno, results...)
local function triple(name, wantmsg, wanterr, ok, msg, err)
  t.is(ok, nil, name .. ": nil")
  t.like(msg, wantmsg, name .. ": message")
  t.is(err, wanterr, name .. ": errno")
end

local function readfile(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

t.is(mp.available, true, "misc.memprof.available")

do
  t.is(mp.start(tmp), true, "start(path) returns true")
  triple("a second start", "profiler is running already", EINVAL, mp.start(tmp .. ".2"))
  t.ok(io.open(tmp .. ".2") == nil, "the second start did not create its file")
  t.is(mp.stop(), true, "stop() returns true")
  triple("a second stop", "profiler is not running", EINVAL, mp.stop())
  local s = readfile(tmp)
  t.is(s:sub(1, 7), "ljs\3\0\0\0", "the file starts with the symbol table prologue (ljs v3)")
  t.ok(s:find("ljm\3\0\0\0", 1, true), "and holds the memprof prologue (ljm v3)")
  t.is(s:byte(-1), 0x80, "and ends with the epilogue byte")
end

triple("start on a path that cannot be opened",
  "^/nonexistent%-dir/x%.bin: No such file", ENOENT, mp.start("/nonexistent-dir/x.bin"))
t.is(mp.start(tmp), true, "a failed start left nothing running")
t.is(mp.stop(), true, "...")

do -- a disk that fills: the profile stops, the program goes on
  t.is(mp.start("/dev/full"), true, "start on /dev/full succeeds (the disk is written later)")
  local keep = {}
  for i = 1, 300000 do keep[i] = { i } end   -- several MB of events
  keep = nil
  triple("stop after the disk filled", "No space left on device", ENOSPC, mp.stop())
  t.is(mp.start(tmp), true, "profiling works again afterwards")
  t.is(mp.stop(), true, "...")
end

do -- os.exit() never closes the VM: the stream is completed at exit
  local script = tmp .. ".lua"
  local f = assert(io.open(script, "w"))
  f:write(string.format([[
assert(misc.memprof.start(%q))
local t = {}
for i = 1, 1000 do t[i] = {} end
os.exit(3)
]], tmp .. ".exit"))
  f:close()
  local rc = os.execute(arg[-1] .. " " .. script)
  t.is(rc, 3 * 256, "the script exited with its own status")
  t.is(readfile(tmp .. ".exit"):byte(-1), 0x80, "its stream is complete")
  os.remove(script)
  os.remove(tmp .. ".exit")
end

os.remove(tmp)
t.done()
