#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- The tree this build came from has a flavour, and the series applies to
-- it; a tree that moved under a hunk stops the build with the patch, the
-- file and the hunk named, and a file other than the series' is no tree,
-- nor a Debian source package other than luajit and luajit2. OpenResty's
-- trees are told by table.isarray, its older ones' 2.1.0-beta3 too.
local t = require("tap")
local build = os.getenv("LJPROF_BUILD_DIR")
local up = build and build .. "/upstream"
if not up or not io.open(up .. "/src/vm_x64.dasc") then
  print("1..0 # SKIP no fetched tree: LJPROF_BUILD_DIR/upstream")
  os.exit(0)
end
local function run(cmd)
  local p = assert(io.popen(cmd .. " 2>&1; echo \"exit $?\""))
  local out = p:read("*a")
  p:close()
  return out:match("^(.-)exit (%d+)\n$")
end

local flavour = run("scripts/luajit-flavour " .. up):match("^(%w+)\n")
t.ok(flavour == "debian" or flavour == "rolling" or flavour == "openresty",
     "the build's tree is a flavour we know: " .. tostring(flavour))

local tmp = os.tmpname()
os.remove(tmp)
assert(os.execute(("mkdir -p %s && cp -a %s %s/up"):format(tmp, up, tmp)) == 0)
-- 0002 counts live traces where trace_save clears the current trace.
local f = assert(io.open(tmp .. "/up/src/lj_trace.c"))
local src = f:read("*a")
f:close()
local moved, n = src:gsub("\n  J%->cur%.traceno = 0;\n", "\n  J->cur.traceno = 0;  /* moved */\n")
t.cmp(n, ">=", 1, "a context line of 0002 is changed in a copy of the tree")
f = assert(io.open(tmp .. "/up/src/lj_trace.c", "w"))
f:write(moved)
f:close()

local out, rc = run(("scripts/prepare-tree %s/up %s/tree"):format(tmp, tmp))
t.is(rc, "1", "prepare-tree fails")
t.like(out, "patches/0002%-metrics%-counters%.patch does not apply to the LuaJIT tree in "
       .. tmp:gsub("%p", "%%%0") .. "/up %(" .. flavour .. "%)", "it names the patch and the flavour")
t.like(out, "\n  src/lj_trace%.c: Hunk #%d+ FAILED at %d+%.", "it names the file and the hunk")
t.ok(not io.open(tmp .. "/tree/src/lj_trace.c"), "no tree is left half patched")

out, rc = run(("LUAJIT_SRC=%s/up/README scripts/fetch-luajit %s/fetched"):format(tmp, tmp))
t.is(rc, "1", "fetch-luajit refuses a file that is no tarball of a tree")
out, rc = run(("LUAJIT_SRC=debian:lua5.1 scripts/fetch-luajit %s/fetched"):format(tmp))
t.is(rc, "1", "fetch-luajit refuses a Debian source package it does not know")
t.like(out, "the Debian source packages known are luajit and luajit2", "and names those it knows")

-- OpenResty's releases before 2023 (Debian's source package luajit2) say
-- 2.1.0-beta3 in their luajit.h, as Debian's luajit does: table.isarray
-- tells them.
assert(os.execute(("mkdir -p %s/beta3/src"):format(tmp)) == 0)
f = assert(io.open(tmp .. "/beta3/src/luajit.h", "w"))
f:write('#define LUAJIT_VERSION\t\t"LuaJIT 2.1.0-beta3"\n')
f:close()
f = assert(io.open(tmp .. "/beta3/src/lib_table.c", "w"))
f:write("LJLIB_CF(table_concat)\n")
f:close()
t.is(run("scripts/luajit-flavour " .. tmp .. "/beta3"), "debian\n", "a 2.1.0-beta3 tree is Debian's")
f = assert(io.open(tmp .. "/beta3/src/lib_table.c", "a"))
f:write("LJLIB_CF(table_isarray)\n")
f:close()
t.is(run("scripts/luajit-flavour " .. tmp .. "/beta3"), "openresty\n",
     "a 2.1.0-beta3 tree with table.isarray is OpenResty's")
os.execute("rm -rf " .. tmp)
t.done()
