#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- LuaJIT's own test suite (luajit-test-cleanup, `luajit test.lua` in its
-- test/ folder) passes the same tests under memprof and under sysprof C at
-- 1 ms as without a profiler: the profilers change nothing a program sees;
-- and under the ASan VM with the stack check, with call stacks on each event.
-- Profiles start through LJPROF, as for any unchanged program.
local t = require("tap")
local build = os.getenv("LJPROF_BUILD_DIR")
local tgz = os.getenv("LJPROF_LUAJIT_TESTS")
local function exists(p) local f = p and io.open(p) if f then f:close() end return f ~= nil end
if not build or not exists(tgz) then
  print("1..0 # SKIP no LuaJIT test suite: LJPROF_LUAJIT_TESTS (make test sets it" ..
        " from ../shared/upstreams/luajit-test-cleanup-*.tar.gz)")
  os.exit(0)
end
local exe = build .. "/bin/luajit"
local dir = build .. "/luajit-tests"
assert(os.execute(("rm -rf '%s' && mkdir -p '%s' && tar -xzf '%s' -C '%s' --strip-components=1")
  :format(dir, dir, tgz, dir)) == 0, "unpacking " .. tgz)

-- Returns passed, failed, the failing test numbers (a string). vm: the
-- VM to run, build/bin/luajit if nil.
local function suite(ljprof, vm)
  local p = assert(io.popen(("cd '%s/test' && LJPROF='%s' ASAN_OPTIONS=detect_leaks=0 '%s' test.lua 2>&1")
    :format(dir, ljprof, vm or exe)))
  local out = p:read("*a")
  p:close()
  local pass, fail = out:match("(%d+) passed, (%d+) failed")
  if not pass then
    pass, fail = out:match("all (%d+) tests passed"), 0
  end
  return tonumber(pass), tonumber(fail),
         out:match("pass command line arguments: ([%d ]+)") or "", out
end

local pass, fail, which, out = suite("")
t.ok(pass and pass > 0, "the suite runs without a profiler", out:sub(-400))
t.diag(("unprofiled: %s passed, %s failed %s"):format(pass, fail, which))
-- The ASan VM built with the stack check (make asan) walks each event's
-- stack again whole and aborts if the writer's differs: the whole suite
-- with call stacks on every event.
local checkvm = build .. "/asan/bin/luajit"
local runs = {
  { "memprof", "mem:path=" .. dir .. "/mem.bin", dir .. "/mem.bin" },
  { "sysprof C 1 ms", "cpu:mode=C,interval=1,path=" .. dir .. "/cpu.bin", dir .. "/cpu.bin" },
}
if exists(checkvm) then
  runs[#runs+1] = { "memprof stacks, each checked", "mem:stacks=1,path=" .. dir .. "/stk.bin",
                    dir .. "/stk.bin", checkvm }
else
  t.diag("no ASan VM with the stack check (" .. checkvm .. "): make asan")
end
for _, r in ipairs(runs) do
  local p2, f2, w2, o2 = suite(r[2], r[4])
  t.diag(("%s: %s passed, %s failed %s"):format(r[1], p2, f2, w2))
  t.is(p2, pass, "under " .. r[1] .. ": as many tests pass")
  t.is(w2, which, "under " .. r[1] .. ": the same tests fail")
  t.ok(not o2:find("memprof: stack node", 1, true), "under " .. r[1] .. ": no stack differs",
       o2:match("memprof: stack node[^\n]*"))
  local f = io.open(r[3], "rb")
  t.ok(f and f:seek("end") > 4096, "under " .. r[1] .. ": the whole run was profiled",
       o2:sub(-400))
  if f then f:close() end
end
os.execute(("rm -rf '%s'"):format(dir))
t.done()
