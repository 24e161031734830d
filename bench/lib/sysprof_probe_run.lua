-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- What one sysprof sample and one start cost, in the VM under test (with
-- the sysprof_probe module, bench/probe/).
-- Usage: luajit sysprof_probe_run.lua sample lua|mixed DEPTH PATH
--   The median time to take sysprof's signal in mode D (delivery and a
--   count) and in mode C (the walk on top) at DEPTH frames, best of three
--   tries each; prints "D_NS C_NS". PATH keeps the last mode-C stream.
--   lua: DEPTH Lua frames; mixed: every second Lua frame called from C
--   (probe.call), so the native walk meets an interpreter activation at
--   each level.
-- Usage: luajit sysprof_probe_run.lua start N PATH
--   N starts and stops in mode C (files PATH.1 .. PATH.N, removed), each
--   timed on the monotonic clock; prints "FIRST_START MEDIAN_START
--   MEDIAN_STOP" in nanoseconds.
local probe = require("sysprof_probe")
jit.off()

local function median(t)
  table.sort(t)
  return t[math.floor(#t / 2) + 1]
end

local function sample_cost(kind, depth, path)
  local ROUNDS, result = 2000, nil
  local nest
  nest = function(d)
    if d <= 1 then result = probe.median(ROUNDS)
    elseif kind == "mixed" and d % 2 == 0 then probe.call(nest, d - 1)
    else nest(d - 1) end
    return 0  -- Not a tail call: each level keeps its frame.
  end
  local function cost(mode)
    local best
    for _ = 1, 3 do
      -- The timer never fires during a measurement: the signals are ours.
      assert(misc.sysprof.start({ mode = mode, interval = 10000, clock = "wall",
                                  path = path }))
      nest(depth)
      assert(misc.sysprof.stop())
      best = math.min(best or result, result)
    end
    return best
  end
  print(cost("D"), cost("C"))
end

local function start_cost(n, path)
  local starts, stops = {}, {}
  for i = 1, n do
    local file = path .. "." .. i  -- A new file, as a profile's usually is.
    local t0 = probe.now()
    assert(misc.sysprof.start({ mode = "C", interval = 1, path = file }))
    local t1 = probe.now()
    assert(misc.sysprof.stop())
    starts[i], stops[i] = t1 - t0, probe.now() - t1
    os.remove(file)
  end
  local first = starts[1]
  print(string.format("%d %d %d", first, median(starts), median(stops)))
end

if arg[1] == "sample" then
  sample_cost(arg[2], tonumber(arg[3]), arg[4])
elseif arg[1] == "start" then
  start_cost(tonumber(arg[2]), arg[3])
else
  error("usage: sysprof_probe_run.lua sample lua|mixed DEPTH PATH | start N PATH")
end
