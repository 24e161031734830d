#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Every error of misc.memprof and misc.sysprof against the reference's
-- words for the same case (its lib_misc.c, which its tests
-- misclib-memprof-lapi and misclib-sysprof-lapi match on): the message
-- starts with those words, exactly; where ours says more, it says it
-- after them. The errno is a number, as the reference's tests ask.
local t = require("tap")
local mp, sp = misc.memprof, misc.sysprof
local tmp = os.tmpname()
local BAD = "/nonexistent-dir/x.bin"
local EINVAL, ENOENT, ENOSPC = 22, 2, 28

-- words(name, reference's words, ours after them or nil, errno, results...)
local function words(name, ref, more, errno, ok, msg, err)
  t.is(ok, nil, name .. ": nil")
  t.is(msg, more and ref .. more or ref, name .. ": " .. (more and "the reference's words, then ours" or "the reference's words"))
  t.is(err, errno, name .. ": errno " .. errno)
end

-- memprof. The reference takes a path only; the table form is ours, and
-- its bad options are what the reference calls a misuse.
words("memprof.start, a path that cannot be opened", BAD .. ": No such file or directory", nil,
      ENOENT, mp.start(BAD))
assert(mp.start(tmp))
words("memprof.start while running", "profiler is running already", nil, EINVAL, mp.start(tmp))
assert(mp.stop())
words("memprof.stop, not running", "profiler is not running", nil, EINVAL, mp.stop())
words("memprof.start, a bad format", "profiler misuse", ': format must be "v3", "v4", "v5" or "v6"',
      EINVAL, mp.start({ path = tmp, format = "v2" }))
words("memprof.start, options neither a path nor a table", "profiler misuse",
      ": options must be a path or a table", EINVAL, mp.start(true))
words("memprof.start, a follow that is not a boolean", "profiler misuse",
      ": follow must be a boolean", EINVAL, mp.start({ path = tmp, follow = 1 }))
words("memprof.start, a path too long to follow forks", "profiler misuse",
      ": path too long to follow forks", EINVAL,
      mp.start({ path = string.rep("x", 3000), follow = true }))

-- sysprof. The reference's start takes a table only, with mode "D", "L" or
-- "C" and an interval of 1 ms or more; anything else is a misuse.
words("sysprof.start, mode A", "profiler misuse", ': mode must be "D", "L" or "C"', EINVAL,
      sp.start({ mode = "A", path = tmp }))
words("sysprof.start, interval -1", "profiler misuse",
      ": interval must be a number of milliseconds above 0", EINVAL,
      sp.start({ mode = "C", interval = -1, path = tmp }))
words("sysprof.start, options not a table", "profiler misuse", ": options must be a table", EINVAL,
      sp.start("C"))
words("sysprof.start, a path that is not a string", "profiler misuse", ": path must be a string",
      EINVAL, sp.start({ mode = "C", path = {} }))
words("sysprof.start, a bad format", "profiler misuse", ': format must be "v2", "v3" or "v4"', EINVAL,
      sp.start({ mode = "C", format = "v1", path = tmp }))
words("sysprof.start, a follow that is not a boolean", "profiler misuse",
      ": follow must be a boolean", EINVAL, sp.start({ mode = "C", path = tmp, follow = "yes" }))
words("sysprof.start, a path too long to follow forks", "profiler misuse",
      ": path too long to follow forks", EINVAL,
      sp.start({ mode = "C", path = string.rep("x", 3000), follow = true }))
-- The reference says errno's words alone; ours names the path after them.
words("sysprof.start, a path that cannot be opened", "No such file or directory", ": " .. BAD,
      ENOENT, sp.start({ mode = "C", path = BAD }))
assert(sp.start({ mode = "D", path = tmp }))
words("sysprof.start while running", "profiler is running already", nil, EINVAL,
      sp.start({ mode = "D", path = tmp }))
assert(sp.stop())
-- Here the reference says "profiler is running already" (its sysprof
-- names every PROFILE_ERRRUN so), which is not what happened; its test asks
-- only for a message. Ours says what its memprof says in this case.
words("sysprof.stop, not running", "profiler is not running", nil, EINVAL, sp.stop())

-- A writer that fails on the symbol table, written at start: more protos
-- than the profilers' two buffers hold (2 x 1 MiB, 2 x 256 KiB), to a full
-- disk. The reference names the path for memprof, and nothing but errno's
-- words for sysprof.
do
  local keep, name = {}, string.rep("x", 1000)
  for i = 1, 2500 do keep[i] = assert(loadstring("return function() end", name .. i))() end
  words("memprof.start, the writer fails at start", "/dev/full: No space left on device", nil,
        ENOSPC, mp.start("/dev/full"))
  words("sysprof.start, the writer fails at start", "No space left on device", nil, ENOSPC,
        sp.start({ mode = "C", path = "/dev/full" }))
  keep = nil
end
t.is(mp.start(tmp), true, "memprof starts again after that")
t.is(mp.stop(), true, "...")
t.is(sp.start({ mode = "C", path = tmp }), true, "sysprof starts again after that")
t.is(sp.stop(), true, "...")

os.remove(tmp)
t.done()
