#!/usr/bin/env luajit
-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- LuaJIT's own sampling profiler keeps working in our build: -jp, jit.profile.
local t = require("tap")
local profile = require("jit.profile")

-- Lua work until have() (samples counted by a profile's callback) reaches n.
local function busy(n, have)
  local more, x = t.waiting("jit.profile samples", n, have, 60), 0
  while more() do
    for i = 1, 1000 do x = x + i % 7 end
  end
  return x
end

do -- jit.profile delivers samples with a valid VM state and stack
  local samples, states, tops = 0, {}, {}
  profile.start("fi1", function(thread, n, vmstate)
    samples = samples + n
    states[vmstate] = true
    local top = profile.dumpstack(thread, "f", 1)
    tops[top] = (tops[top] or 0) + n
  end)
  busy(100, function() return samples end)
  profile.stop()
  t.cmp(samples, ">=", 100, "jit.profile delivered samples at 1 ms")
  local bad = {}
  for s in pairs(states) do if not s:match("^[NIJCG]$") then bad[#bad + 1] = s end end
  t.is(table.concat(bad), "", "every vmstate is one of N I J C G")
  local best, bestn = nil, 0
  for k, n in pairs(tops) do if n > bestn then best, bestn = k, n end end
  t.like(best, "busy", "the busiest function is busy()")
end

-- The VM state letters: each workload shows its own. Each runs until the
-- profile has 300 samples: more() says whether it is to go on.
do
  local function letters(f)
    local n, count = 0, {}
    profile.start("i1", function(thread, samples, vmstate)
      count[vmstate] = (count[vmstate] or 0) + samples
      n = n + samples
    end)
    f(t.waiting("jit.profile samples", 300, function() return n end, 60))
    profile.stop()
    local best, bestn, all = "?", 0, {}
    for k, c in pairs(count) do
      if c > bestn then best, bestn = k, c end
      all[#all + 1] = k .. "=" .. c
    end
    return best, bestn, n, table.concat(all, " ")
  end
  local cmod = require("cmod")
  local cases = {
    { "I", "interpreted Lua", function(more)
        jit.off(); local x = 0
        while more() do for i = 1, 1000 do x = x + i % 7 end end; jit.on() end },
    { "N", "compiled code", function(more)
        -- Samples reach the callback when a trace exits: more() kept out
        -- of traces makes the inner loop's trace end each round.
        jit.off(more)
        local x = 0
        while more() do for i = 1, 1e6 do x = x + i % 7 end end end },
    { "C", "a C function", function(more)
        while more() do cmod.spin(2e7) end end },
    { "G", "the garbage collector", function(more)
        local t = {}; for i = 1, 2e5 do t[i] = { i } end
        while more() do collectgarbage() end end },
  }
  for _, c in ipairs(cases) do
    local best, bestn, n, all = letters(c[3])
    if not t.is(best, c[1], string.format("%s is mostly '%s' (%d of %d samples)", c[2], c[1], bestn, n)) then
      t.diag("samples by letter: " .. all)
    end
  end
end

do -- luajit -jp=f prints a profile naming the hot function
  local exe = arg[-1]
  local script = os.tmpname()
  local f = assert(io.open(script, "w"))
  f:write([[
local function spin()
  local stop, x = os.clock() + 0.4, 0
  while os.clock() < stop do for i = 1, 1000 do x = x + i % 3 end end
  return x
end
spin()
]])
  f:close()
  local p = assert(io.popen(exe .. " -jp=fi1 " .. script .. " 2>&1"))
  local out = p:read("*a")
  p:close()
  os.remove(script)
  t.like(out, "%d+%%%s+spin", "-jp=f lists spin with a percentage")
end

t.done()
