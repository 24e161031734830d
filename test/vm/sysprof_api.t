#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- misc.sysprof from Lua: results and errors (true, or nil, message,
-- errno), counters that add up, a failing writer that stops the profile
-- and not the program, and jit.profile running at the same time.
local t = require("tap")
local sp = misc.sysprof
local tmp = os.tmpname()
local EINVAL, ENOENT, ENOSPC = 22, 2, 28

local function triple(name, wantmsg, wanterr, ok, msg, err)
  t.is(ok, nil, name .. ": nil")
  t.like(msg, wantmsg, name .. ": message")
  t.is(err, wanterr, name .. ": errno")
end

-- Lua work until the profile running has n samples (by have(), default
-- the profile's own count).
local function spin(n, have)
  local more, x = t.waiting("samples", n, have or t.samples, 60), 0
  while more() do for i = 1, 100000 do x = x + i % 7 end end
  return x
end

t.is(sp.available, true, "misc.sysprof.available")

t.is(sp.start({ path = tmp }), true, "start with defaults (mode D, 10 ms)")
triple("a second start", "profiler is running already", EINVAL, sp.start({ path = tmp .. ".2" }))
t.ok(io.open(tmp .. ".2") == nil, "the second start did not create its file")
spin(100)  -- Enough for the share of LFUNC and TRACE below.
local r = sp.report()
t.cmp(r.samples, ">=", 100, "report() counts while running (" .. r.samples .. ")")
t.is(sp.stop(), true, "stop() returns true")
triple("a second stop", "profiler is not running", EINVAL, sp.stop())
local last = sp.report()
local sum = 0
for _, n in pairs(last.vmstate) do sum = sum + n end
t.is(sum, last.samples, "after stop, report() keeps the last profile's counts, and they add up")
t.cmp(last.vmstate.LFUNC + last.vmstate.TRACE, ">", 0.8 * last.samples,
      "spinning Lua is counted as LFUNC or TRACE (" .. last.vmstate.LFUNC .. " + " ..
      last.vmstate.TRACE .. " of " .. last.samples .. ")")

-- Bad options: the reference's "profiler misuse", then what is wrong.
triple("an unknown mode", "^profiler misuse: mode must be", EINVAL, sp.start({ mode = "X", path = tmp }))
triple("a zero interval", "^profiler misuse: interval must be", EINVAL, sp.start({ interval = 0, path = tmp }))
triple("a negative interval", "^profiler misuse: interval must be", EINVAL, sp.start({ interval = -1, path = tmp }))
triple("an interval that is not a number", "^profiler misuse: interval must be", EINVAL,
       sp.start({ interval = 0/0, path = tmp }))
triple("an unknown clock", "^profiler misuse: clock must be", EINVAL, sp.start({ clock = "sun", path = tmp }))
triple("a jit that is not a boolean", "^profiler misuse: jit must be a boolean$", EINVAL,
       sp.start({ jit = 1, path = tmp }))
triple("options that are not a table", "^profiler misuse: options must be a table", EINVAL, sp.start("C"))
triple("an unknown format", '^profiler misuse: format must be "v2", "v3" or "v4"$', EINVAL,
       sp.start({ format = "v5", path = tmp }))
triple("a format that is not a name", '^profiler misuse: format must be "v2", "v3" or "v4"$', EINVAL,
       sp.start({ format = 2, path = tmp }))
triple("a format that is a table", '^profiler misuse: format must be "v2", "v3" or "v4"$', EINVAL,
       sp.start({ format = {}, path = tmp }))
-- The reference says only errno's words here; ours names the path after.
triple("a path that cannot be opened", "^No such file or directory: /nonexistent%-dir/s%.bin$", ENOENT,
       sp.start({ path = "/nonexistent-dir/s.bin" }))

do -- a disk that fills: the profile stops, the program goes on
  t.is(sp.start({ mode = "C", interval = 1, clock = "wall", path = "/dev/full" }), true,
       "start on /dev/full succeeds (the disk is written later)")
  spin(1000)  -- More than the buffer holds.
  triple("stop after the disk filled", "^No space left on device$", ENOSPC, sp.stop())
  t.is(sp.start({ path = tmp }), true, "profiling works again afterwards")
  t.is(sp.stop(), true, "...")
end

do -- jit.profile at the same time: both deliver
  local profile = require("jit.profile")
  local jp = 0
  t.is(sp.start({ mode = "C", interval = 1, path = tmp }), true, "sysprof runs")
  profile.start("i1", function(_, n) jp = jp + n end)
  -- Interpreted: jit.profile calls back where the interpreter dispatches,
  -- and spin()'s loop, compiled before, stitches its calls and never gets
  -- there.
  jit.off()
  jit.flush()
  spin(20, function() return math.min(jp, t.samples()) end)
  jit.on()
  profile.stop()
  local n = sp.report().samples
  t.is(sp.stop(), true, "sysprof stops cleanly with jit.profile around")
  t.cmp(jp, ">=", 20, "jit.profile delivered its samples (" .. jp .. ")")
  t.cmp(n, ">=", 20, "sysprof took its samples (" .. n .. ")")
end

os.remove(tmp)
t.done()
