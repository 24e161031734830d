#!/usr/bin/env luajit
-- LuaJIT's own test suite (luajit-test-cleanup, `luajit test.lua` in its
-- test/ folder) passes the same tests under memprof and under sysprof C at
-- 1 ms as without a profiler: the profilers change nothing a program sees.
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

-- Returns passed, failed, the failing test numbers (a string).
local function suite(ljprof)
  local p = assert(io.popen(("cd '%s/test' && LJPROF='%s' '%s' test.lua 2>&1")
    :format(dir, ljprof, exe)))
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
local runs = {
  { "memprof", "mem:path=" .. dir .. "/mem.bin", dir .. "/mem.bin" },
  { "sysprof C 1 ms", "cpu:mode=C,interval=1,path=" .. dir .. "/cpu.bin", dir .. "/cpu.bin" },
}
for _, r in ipairs(runs) do
  local p2, f2, w2, o2 = suite(r[2])
  t.diag(("%s: %s passed, %s failed %s"):format(r[1], p2, f2, w2))
  t.is(p2, pass, "under " .. r[1] .. ": as many tests pass")
  t.is(w2, which, "under " .. r[1] .. ": the same tests fail")
  local f = io.open(r[3], "rb")
  t.ok(f and f:seek("end") > 4096, "under " .. r[1] .. ": the whole run was profiled",
       o2:sub(-400))
  if f then f:close() end
end
os.execute(("rm -rf '%s'"):format(dir))
t.done()
