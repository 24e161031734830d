#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- misc.label: the set a coroutine carries. Set, get and restore; the call
-- form, with errors and yields in fn; what new coroutines start with; the
-- rules and their bounds; sets interned and collected; a switch in a
-- compiled loop.
local t = require("tap")
t.is(rawget(misc, "label"), nil, "misc.label is not compiled before it is read")
local label = misc.label
t.is(type(label), "function", "then it is a function")
t.is(rawget(misc, "label"), label, "misc's own field from then on")

-- The labels in force, as "k=v,k=v" sorted: what the tests compare.
local function now()
  local l, keys = label(), {}
  for k, v in pairs(l) do keys[#keys + 1] = k .. "=" .. v end
  table.sort(keys)
  return table.concat(keys, ",")
end

do -- set, get, restore
  t.is(now(), "", "a program starts with no labels")
  local prev = label({ route = "/api", plugin = "auth" })
  t.is(now(), "plugin=auth,route=/api", "label(t) sets the labels")
  t.is(type(prev), "userdata", "and returns the set it replaces, a set object")
  t.is(tostring(prev):match("^labels: %d+$") ~= nil, true, "tostring(set) names it")
  local a, b = label(), label()
  t.ok(type(a) == "table" and a ~= b, "label() returns a new table each time")
  a.route = "/changed"
  t.is(now(), "plugin=auth,route=/api", "changing it changes nothing in force")
  local cur = label(prev)
  t.is(now(), "", "label(prev) restores no labels")
  t.is(cur.route, "/api", "the set object reads as its labels")
  t.is(cur.plugin, "auth", "each of them")
  t.is(cur.tenant, nil, "and nil for a key it has not")
  t.is(getmetatable(cur), "label set", "its metatable is not the program's")
  t.like(select(2, pcall(function() cur.route = "/x" end)), "immutable",
         "a set object cannot be changed")
  label(cur)
  t.is(now(), "plugin=auth,route=/api", "label(set) sets it again")
  label({})
  t.is(now(), "", "label({}) clears")
  t.is(label(nil).route, nil, "label(nil) gets, as label() does")
end

do -- interned: the same labels are the same object
  label({ a = "1", b = "2" })
  local s1 = label({ b = "2", a = "1" })
  local s2 = label({})
  t.ok(s1 == s2, "the same labels, in any order, are the same set")
  label({ a = "1", b = "3" })
  local s3 = label({})
  t.ok(s3 ~= s1, "other labels, another set")
  local empty1 = label({})
  local empty2 = label({})
  t.ok(empty1 == empty2, "no labels: one empty set")
end

do -- call form
  label({ route = "/outer" })
  local r1, r2 = label({ route = "/inner" }, function(x, y)
    return now(), x + y
  end, 1, 2)
  t.is(r1, "route=/inner", "fn runs under the set")
  t.is(r2, 3, "with its arguments, returning its results")
  t.is(now(), "route=/outer", "the set is restored after")
  t.is(select("#", label({}, function() return nil, nil end)), 2,
       "every result of fn, nils too")
  local ok, err = pcall(label, { route = "/fails" }, function()
    error("boom")
  end)
  t.is(ok, false, "an error in fn passes through")
  t.like(err, "labels%.t:%d+: boom", "with its message and position")
  t.is(now(), "route=/outer", "and the set is restored")
  local obj = {}
  local ok2, err2 = pcall(label, { route = "/fails" }, function() error(obj) end)
  t.ok(not ok2 and err2 == obj, "an error value that is a table is the same table")
  local deep = label({ l = "1" }, function()
    return label({ l = "2" }, function()
      return label({ l = "3" }, now) .. " " .. now()
    end) .. " " .. now()
  end)
  t.is(deep .. " " .. now(), "l=3 l=2 l=1 route=/outer", "nested calls restore each level")
  local ok3, err3 = pcall(label, { route = "/x" }, nil)
  t.ok(ok3 and type(err3) == "userdata", "label(set, nil) is the set form")
  label({ route = "/outer" })
  local ok4 = pcall(label, { route = "/x" }, 42)
  t.is(ok4, false, "a fn that cannot be called is an error")
  t.is(now(), "route=/outer", "after which the set is restored too")
  label({})
end

do -- yields: each coroutine keeps its own set
  label({ who = "main" })
  local co = coroutine.create(function()
    label({ who = "co" })
    local inside = label({ who = "call" }, function()
      local seen = now()
      coroutine.yield(seen)
      seen = seen .. " " .. now()
      coroutine.yield(seen)
      return now()
    end)
    coroutine.yield(inside .. " then " .. now())
    error("after")
  end)
  local _, v1 = coroutine.resume(co)
  t.is(v1, "who=call", "fn's set in force before it yields")
  t.is(now(), "who=main", "the resumer's own set, while fn is suspended")
  label({ who = "main2" })
  local _, v2 = coroutine.resume(co)
  t.is(v2, "who=call who=call", "fn resumed under another set sees its own")
  t.is(now(), "who=main2", "and the resumer keeps its own")
  local _, v3 = coroutine.resume(co)
  t.is(v3, "who=call then who=co", "fn's return restores the coroutine's set")
  local ok, err = coroutine.resume(co)
  t.ok(not ok and err:match("after"), "the coroutine ends")
  t.is(now(), "who=main2", "none of which changed the resumer's")

  -- An error after a yield in the call form restores too.
  local co2 = coroutine.wrap(function()
    label({ who = "co2" })
    local ok2 = pcall(label, { who = "failing" }, function()
      coroutine.yield(now())
      error("late")
    end)
    return tostring(ok2) .. " " .. now()
  end)
  t.is(co2(), "who=failing", "fn yields under its set")
  t.is(co2(), "false who=co2", "fails after the resume, and the set is restored")
  label({})
end

do -- new coroutines
  label({ tenant = "t1" })
  local co = coroutine.create(function() return now() end)
  local w = coroutine.wrap(function() return now() end)
  label({ tenant = "t2" })
  t.is(select(2, coroutine.resume(co)), "tenant=t1",
       "coroutine.create: the creator's set when it was created")
  t.is(w(), "tenant=t1", "coroutine.wrap: the same")
  local inner = coroutine.wrap(function()
    label({ tenant = "child" })
    return coroutine.wrap(function() return now() end)()
  end)()
  t.is(inner, "tenant=child", "a coroutine's child starts with the coroutine's set")
  t.is(now(), "tenant=t2", "a child's label() changes only the child")
  local ok, cmod = pcall(require, "cmod")
  if ok then
    t.is(cmod.newthread().tenant, "t2",
         "lua_newthread in a C function called from Lua: the running set")
    t.is(coroutine.wrap(function()
      label({ tenant = "spawned" })
      return cmod.newthread().tenant
    end)(), "spawned", "the running coroutine's, as ngx.thread.spawn's")
  else
    t.ok(false, "cmod (build/test/cmod.so, through LUA_CPATH): " .. tostring(cmod))
  end
  label({})
end

do -- the rules, each with its message, nothing changed by a refusal
  label({ keep = "me" })
  local function fails(set, pattern, name)
    local ok, err = pcall(label, set)
    t.ok(not ok and err:match(pattern), name, tostring(err))
  end
  fails({ [1] = "x" }, "^label key must be a string, got number$", "a number key")
  fails({ [true] = "x" }, "got boolean$", "a boolean key")
  fails({ [""] = "x" }, "^label key must not be empty$", "an empty key")
  fails({ route = 1 }, "^label 'route' must be a string, got number$",
        "a number value (no conversion)")
  fails({ route = {} }, "got table$", "a table value")
  fails(42, "^label set must be a table or a label set, got number$", "a number")
  fails(io.stdout, "got userdata$", "a userdata that is no set")
  local ok, err = pcall(label, { route = "/x" }, function() end, 1)
  t.ok(ok, "the call form takes a valid set", tostring(err))
  t.is(now(), "keep=me", "no refusal changed the set")
  -- The error is the caller's: its position, not misc.label's.
  local ok2, err2 = pcall(function() label({ [""] = "x" }) end)
  t.like(err2, "^[^:]*labels%.t:%d+: label key must not be empty$",
         "a direct call's error names the caller's line")
  local ok3, err3 = pcall(function() label({ x = false }, print) end)
  t.like(err3, "^[^:]*labels%.t:%d+: label 'x' must be a string, got boolean$",
         "the call form's too")
  t.ok(not ok2 and not ok3, "both refused")
  label({})
end

do -- bounds: 16 labels, keys of 64 bytes, values of 255
  local set = {}
  for i = 1, 16 do set["k" .. i] = "v" end
  t.ok(pcall(label, set), "16 labels")
  set.k17 = "v"
  local ok, err = pcall(label, set)
  t.ok(not ok and err:match("^label set has more than 16 labels$"), "17 are refused", err)
  t.ok(pcall(label, { [("k"):rep(64)] = "v" }), "a key of 64 bytes")
  ok, err = pcall(label, { [("k"):rep(65)] = "v" })
  t.ok(not ok and err:match("^label key is longer than 64 bytes$"), "65 are refused", err)
  t.ok(pcall(label, { k = ("v"):rep(255) }), "a value of 255 bytes")
  ok, err = pcall(label, { k = ("v"):rep(256) })
  t.ok(not ok and err:match("^label 'k' is longer than 255 bytes$"), "256 are refused", err)
  t.ok(pcall(label, { k = "" }), "an empty value")
  local bytes = "a\0b;c=d\n\255\254"
  label({ [bytes] = bytes })
  t.is(label()[bytes], bytes, "any bytes in keys and values, NUL too")
  label({})
end

do -- sets are collected when nothing holds them; a coroutine holds its own
  collectgarbage("collect")
  local base = misc.getmetrics().gc_udatanum
  collectgarbage("stop")
  for i = 1, 10000 do label({ request = tostring(i) }) end
  label({})
  t.cmp(misc.getmetrics().gc_udatanum - base, ">=", 9000,
        "10000 distinct sets exist while not collected")
  collectgarbage("restart")
  collectgarbage("collect")
  t.cmp(misc.getmetrics().gc_udatanum - base, "<=", 2,
        "and are collected once nothing holds them")

  local co = coroutine.wrap(function()
    label({ held = "by-co-" .. tostring(os.time()) })
    coroutine.yield()
    coroutine.yield(now())
  end)
  co()
  collectgarbage("collect")
  collectgarbage("collect")
  t.like(co(), "^held=by%-co%-%d+$", "a suspended coroutine's set outlives collections")
  co = nil
  collectgarbage("collect")
  t.cmp(misc.getmetrics().gc_udatanum - base, "<=", 2,
        "and goes with the coroutine")
end

-- Trace aborts in misc.label's own code while f runs (a trace of the
-- program's may abort for its own reasons: a function called through
-- pcall that gets hot first returns to pcall's frame, NYI), with why.
local function aborts_in_label(f)
  local util, where = require("jit.util"), {}
  local function ev(what, tr, func, pc, otr, oex)
    if what == "abort" and util.funcinfo(func).source == "=misc.label" then
      where[#where + 1] = tostring(otr) .. " " .. tostring(oex)
    end
  end
  jit.attach(ev, "trace")
  f()
  jit.attach(ev)
  return table.concat(where, "; ")
end

-- Traces since the last jit.flush(), by how they end.
local function links()
  local util, n = require("jit.util"), {}
  for tr = 1, 1000 do
    local info = util.traceinfo(tr)
    if info then n[info.linktype] = (n[info.linktype] or 0) + 1 end
  end
  return n
end

do -- switches in compiled loops: right sets; what the JIT makes of them
  jit.flush()
  local sa = label(label({ route = "/a" }))  -- The set object {route=/a}.
  local aborts = aborts_in_label(function()
    for i = 1, 2000 do
      local p = label(sa)
      label(p)
    end
  end)
  local l = links()
  t.is(now(), "", "switches to set objects in a loop: the set is right after it")
  t.ok(l.loop and not l.stitch, "the loop compiles whole, the switches in it (FFI)")
  t.is(aborts, "", "no trace aborted in misc.label")

  jit.flush()
  local wrong = 0
  aborts = aborts_in_label(function()
    for i = 1, 2000 do
      local p = label(sa)
      if label().route ~= "/a" then wrong = wrong + 1 end
      label(p)
      if i % 3 == 0 then
        label({ route = "/b" })
        if label().route ~= "/b" then wrong = wrong + 1 end
        label(p)
      end
    end
  end)
  l = links()
  t.is(wrong, 0, "every switch took effect, with tables and reads among them")
  t.is(now(), "", "and the set is right after it")
  t.cmp(l.stitch or 0, ">=", 1,
        "a table's switch and a read are C calls: the trace stitches around them")
  t.is(aborts, "", "no trace aborted in misc.label")

  jit.flush()
  local r, set = 0, label(label({ route = "/c" }))
  local function fn(x) return x + 1 end
  aborts = aborts_in_label(function()
    for i = 1, 300 do r = r + label(set, fn, i) end
  end)
  l = links()
  t.is(r, 300 * 301 / 2 + 300, "the call form in a compiled loop")
  t.is(now(), "", "restores each time")
  t.ok(l.loop and not l.stitch, "compiles whole with a set object: pcall and fn inlined")
  t.is(aborts, "", "no trace aborted in misc.label")
  label({})
end

do -- the interpreter's switch (JIT off: no FFI), in a VM of its own
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write([[
    local label = misc.label
    local sa = label(label({ route = "/a" }))
    local ok = 0
    for i = 1, 100 do
      local p = label(sa)
      if label().route == "/a" then ok = ok + 1 end
      label(p)
      if next(label()) == nil then ok = ok + 1 end
      if label(sa, function() return label().route end) == "/a" then ok = ok + 1 end
    end
    io.write(ok)
  ]])
  f:close()
  local lj = arg[-1] or "luajit"
  local p = io.popen(lj .. " -joff " .. script)
  local out = p:read("*a")
  p:close()
  os.remove(script)
  t.is(out, "300", "switches to set objects, reads and the call form, JIT off")
end

t.done()
