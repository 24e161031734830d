#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- OpenResty's luajit2 adds table.isarray, table.nkeys, table.clone and
-- thread.exdata: they keep their results, in the interpreter and in traces,
-- with both profilers running. Other trees have none of them: skipped.
local ok = pcall(require, "table.isarray")
if not ok then
  print("1..0 # SKIP no table.isarray: not OpenResty's luajit2")
  os.exit(0)
end
local t = require("tap")
local ffi = require("ffi")
local isarray, nkeys = require("table.isarray"), require("table.nkeys")
local clone = require("table.clone")
local exdata = require("thread.exdata")

local dir = os.getenv("TMPDIR") or "/tmp"
local mpath = dir .. "/ljprof-openresty-" .. os.time() .. "-mem.bin"
local spath = dir .. "/ljprof-openresty-" .. os.time() .. "-cpu.bin"
t.ok(misc.memprof.start({ path = mpath }), "memprof starts")
t.ok(misc.sysprof.start({ mode = "C", interval = 1, path = spath }), "sysprof starts")

-- Each check runs 200 times: the first ones interpreted, the rest in a trace.
local function each(name, f)
  local bad
  for i = 1, 200 do
    local err = f(i)
    if err and not bad then bad = ("iteration %d: %s"):format(i, err) end
  end
  t.ok(bad == nil, name, bad)
end

each("table.isarray: sequences yes, hashes and holes no", function(i)
  if not isarray({ 1, 2, i }) then return "{1, 2, i}" end
  if isarray({ a = i }) then return "{a = i}" end
  if not isarray({}) then return "{}" end
end)

each("table.nkeys counts array and hash keys", function(i)
  local n = nkeys({ 1, 2, 3, x = i, y = true })
  if n ~= 5 then return "got " .. n end
end)

each("table.clone: a new table with the same keys and values", function(i)
  local src = { 1, i, k = "v" }
  local c = clone(src)
  if c == src then return "same table" end
  if c[1] ~= 1 or c[2] ~= i or c.k ~= "v" then return "contents differ" end
  c[1] = 0
  if src[1] ~= 1 then return "clone shares storage" end
end)

do
  local p = ffi.cast("void *", 0x1234)
  exdata(p)
  each("thread.exdata returns what was set", function()
    if ffi.cast("uintptr_t", exdata()) ~= 0x1234 then return "lost the pointer" end
  end)
  local co = coroutine.create(function() return exdata() end)
  local _, got = coroutine.resume(co)
  t.ok(got ~= nil and ffi.cast("uintptr_t", got) == 0x1234,
       "a coroutine starts with its creator's exdata")
end

-- Until sysprof has sampled, whatever the clock's grain (a POSIX timer
-- goes by the kernel's tick, 4 ms on some machines; the checks above take
-- about 3 ms).
local more = t.waiting("samples", 5, t.samples, 60)
while more() do clone({ 1, 2, 3 }) end

local rep = misc.sysprof.report()
t.ok(misc.sysprof.stop(), "sysprof stops")
t.ok(misc.memprof.stop(), "memprof stops")
t.cmp(rep.samples, ">=", 5, "sysprof sampled while they ran")
local f = io.open(mpath, "rb")
t.cmp(f and #f:read("*a") or 0, ">", 0, "memprof wrote its stream")
if f then f:close() end
os.remove(mpath)
os.remove(spath)
t.done()
