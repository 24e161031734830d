#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- misc.getmetrics(): every counter moves when, and as, the VM says it must.
local t = require("tap")
local ffi = require("ffi")
local M = misc.getmetrics

local names = {
  "strhash_hit", "strhash_miss", "gc_strnum", "gc_tabnum", "gc_udatanum",
  "gc_cdatanum", "gc_total", "gc_freed", "gc_allocated", "gc_steps_pause",
  "gc_steps_propagate", "gc_steps_atomic", "gc_steps_sweepstring",
  "gc_steps_sweep", "gc_steps_finalize", "jit_snap_restore",
  "jit_trace_abort", "jit_mcode_size", "jit_trace_num",
}
do
  local m, n = M(), 0
  for _ in pairs(m) do n = n + 1 end
  t.is(n, #names, "getmetrics() returns 19 fields")
  local bad = {}
  for _, k in ipairs(names) do
    if type(m[k]) ~= "number" or m[k] < 0 then bad[#bad + 1] = k end
  end
  t.is(table.concat(bad, " "), "", "every field is a non-negative number")
end

-- Interpreter only until the JIT section: no trace may change the counts.
jit.off()
collectgarbage("stop")

do -- tables: counted when made, uncounted when collected
  local before = M().gc_tabnum
  local keep = {}
  for i = 1, 1000 do keep[i] = {} end
  local during = M().gc_tabnum
  t.cmp(during - before, ">=", 1001, "1000 new tables (+ the holder) raise gc_tabnum")
  keep = nil
  collectgarbage("collect")
  t.cmp(M().gc_tabnum, "<=", during - 1000, "collecting them lowers gc_tabnum by 1000")
end

do -- strings: a new string misses, the same string again hits
  local s1 = M()
  local a = "metrics-unique-" .. tostring(os.time()) .. "-x"
  local s2 = M()
  local b = "metrics-unique-" .. tostring(os.time()) .. "-x"
  local s3 = M()
  t.ok(a == b, "same content")
  t.cmp(s2.strhash_miss - s1.strhash_miss, ">=", 1, "interning a new string counts a miss")
  t.cmp(s3.strhash_hit - s2.strhash_hit, ">=", 1, "interning it again counts a hit")
  t.cmp(s2.gc_strnum, ">", s1.gc_strnum, "a new string raises gc_strnum")
end

do -- userdata and cdata
  local u0 = M().gc_udatanum
  local keep = {}
  for i = 1, 100 do keep[i] = newproxy() end
  t.is(M().gc_udatanum - u0, 100, "100 newproxy() userdata raise gc_udatanum by 100")
  keep = nil
  collectgarbage("collect")
  t.is(M().gc_udatanum, u0, "collecting them restores gc_udatanum")

  local c0 = M().gc_cdatanum
  local cd = {}
  for i = 1, 50 do cd[i] = ffi.new("int[4]") end
  for i = 51, 60 do cd[i] = ffi.new("int[?]", i) end   -- variable-length cdata
  t.is(M().gc_cdatanum - c0, 60, "60 ffi.new() cdata raise gc_cdatanum by 60")
  cd = nil
  collectgarbage("collect")
  t.is(M().gc_cdatanum, c0, "collecting them restores gc_cdatanum")
end

do -- allocation totals and GC steps
  local m0 = M()
  local keep = {}
  for i = 1, 100 do keep[i] = string.rep("x", 1000 + i) end
  local m1 = M()
  t.cmp(m1.gc_allocated - m0.gc_allocated, ">=", 100 * 1000, "100 KB of strings raise gc_allocated by as much")
  t.is(m1.gc_total - m0.gc_total, (m1.gc_allocated - m0.gc_allocated) - (m1.gc_freed - m0.gc_freed),
       "gc_total moves by allocated - freed")
  keep = nil
  collectgarbage("collect")
  local m2 = M()
  t.cmp(m2.gc_freed - m1.gc_freed, ">=", 100 * 1000, "a full collection frees them: gc_freed moves")
  for _, s in ipairs({ "pause", "propagate", "atomic", "sweepstring", "sweep" }) do
    t.cmp(m2["gc_steps_" .. s], ">", m1["gc_steps_" .. s], "a full collection moves gc_steps_" .. s)
  end
  local f0 = M().gc_steps_finalize
  do local p = newproxy(true); getmetatable(p).__gc = function() end end
  collectgarbage("collect")
  collectgarbage("collect")
  t.cmp(M().gc_steps_finalize, ">", f0, "a __gc finalizer moves gc_steps_finalize")
end
collectgarbage("restart")

-- JIT counters.
jit.on()
jit.flush()
do
  t.is(M().jit_trace_num, 0, "no traces after jit.flush()")
  local m0 = M()
  local x = 0
  for i = 1, 1000 do if i > 900 then x = x + 2 else x = x + 1 end end
  local m1 = M()
  t.cmp(m1.jit_trace_num, ">", m0.jit_trace_num, "a hot loop raises jit_trace_num")
  t.cmp(m1.jit_snap_restore, ">", m0.jit_snap_restore, "a side exit raises jit_snap_restore")
  t.cmp(m1.jit_mcode_size, ">", 0, "compiled code has a machine code size")

  local a0 = M().jit_trace_abort
  for i = 1, 200 do local f = function() return i end; f() end  -- FNEW is NYI
  t.cmp(M().jit_trace_abort, ">", a0, "an uncompilable loop raises jit_trace_abort")

  local pair = ffi.typeof("struct { int a, b; }")
  local c0, n0 = M().gc_cdatanum, M().jit_trace_num
  local keep = {}
  for i = 1, 500 do keep[i] = pair(i, i) end  -- CNEW on a trace
  t.cmp(M().jit_trace_num, ">", n0, "the cdata loop was compiled")
  -- The recorder may make a few cdata of its own; none may go uncounted,
  -- or collecting would take the count below where it started.
  t.cmp(M().gc_cdatanum - c0, ">=", 500, "cdata made by compiled code are counted too")
  keep = nil
  collectgarbage("collect")
  t.is(M().gc_cdatanum, c0, "and uncounted when collected")

  jit.flush()
  t.is(M().jit_trace_num, 0, "jit.flush() brings jit_trace_num back to 0")
end

t.done()
