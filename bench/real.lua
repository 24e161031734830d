-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- How true sysprof's stacks are on real programs the project did not write,
-- from Debian's Lua packages (bench/apt-packages): luacheck on Penlight's
-- sources (compile-heavy: most samples are in the JIT compiler), dkjson
-- with markdown.lua rendering documents in a loop (real/docs.lua), and
-- dkjson decoding and encoding beside markdown.lua (real/json.lua), and
-- inspect.lua rendering nested tables as text (real/inspect.lua).
-- Each runs ROUNDS times under LJPROF=cpu:mode=C,interval=1; from the
-- collapsed stacks: the share of samples with a Lua frame at "line ?"
-- (inside traces too), and the share whose native stack reaches the
-- program's entry (outermost frame _start, or a thread's start), by what
-- the sample was doing, told by its frames (the collapsed stacks carry no
-- VM state): compiler (trace_state), trace exit (lj_vm_exit_handler,
-- lj_trace_exit), trace (a TRACE frame), GC (the collector's functions),
-- other. The VM states the report counts are printed for scale. The
-- samples at "line ?" by shape (issue #40): the frame under a trace,
-- under a fast function, under lj_dispatch_call, innermost, other; and
-- the samples that name a fast function which is not running: right
-- above a helper only the interpreter's own bytecodes call (BC_CAT's
-- lj_meta_cat, BC_FNEW's lj_func_newL_gc).
-- Then the JIT's story on the same runs: how much of the compiler's time
-- `report --jit` charges to a start location with a known outcome
-- (compiled or aborted); and what recording the compiler's events costs:
-- the same program unprofiled, under sysprof without the events (jit=0)
-- and with them, interleaved, and the stream's bytes per sample.
-- Usage: luajit bench/real.lua LUAJIT LJPROF WORKDIR [ROUNDS]
-- (REAL_STACKS_ONLY=1: the stacks only, not what the events cost)
local harness = require("harness")
local debian_lua = require("debian_lua")
local capture = harness.capture

local luajit, ljprof, work = arg[1], arg[2], arg[3]
assert(luajit and ljprof and work,
       "usage: real.lua LUAJIT LJPROF WORKDIR [ROUNDS]")
local rounds = tonumber(arg[4]) or 3
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
os.execute("mkdir -p " .. work)

local share, env, exists = debian_lua.share, debian_lua.env, debian_lua.exists
local programs = {
  { name = "luacheck on Penlight",
    cmd = luajit .. " -e 'require \"luacheck.main\"' " .. share ..
          "/pl/*.lua", need = share .. "/luacheck/main.lua",
    warns = true },  -- exits 1: it found warnings
  { name = "dkjson + markdown.lua",
    cmd = luajit .. " " .. dir .. "/real/docs.lua 2",
    need = share .. "/markdown.lua" },
  { name = "dkjson decode/encode",
    cmd = luajit .. " " .. dir .. "/real/json.lua 2",
    need = share .. "/dkjson.lua" },
  { name = "inspect.lua rendering",
    cmd = luajit .. " " .. dir .. "/real/inspect.lua 2",
    need = share .. "/inspect.lua" },
}

-- A program's shell command, with the variables VARS: a subshell whose
-- status is 0 when the program did its job.
local function shell(p, vars)
  return ("(%s%s %s%s)"):format(env, vars or "", p.cmd,
                                p.warns and " || [ $? -eq 1 ]" or "")
end


local entries = { _start = true, start_thread = true, clone = true,
                  clone3 = true }

-- What a sample was doing, from its frames (outermost first).
local function kind(frames)
  local k = "other"
  for _, f in ipairs(frames) do
    if f == "trace_state" then return "compiler" end
    if f == "lj_vm_exit_handler" or f == "lj_trace_exit" then k = "exit"
    elseif k == "other" and f:match("^TRACE ") then k = "trace"
    elseif k == "other" and (f:match("^lj_gc_") or f:match("^gc_")) then
      k = "GC"
    end
  end
  return k
end

local kinds = { "compiler", "exit", "trace", "GC", "other" }

-- A sample's "line ?" by shape: what follows the first frame at "line ?"
-- (issue #40's three, and the rest).
local shapes = { "trace", "ffunc", "dispatch", "innermost", "other" }
local function shape(frames)
  for i, f in ipairs(frames) do
    if f:find("(line ?)", 1, true) then
      local nxt = frames[i + 1]
      if nxt == nil then return "innermost" end
      if nxt:match("^TRACE ") or (nxt:match("^@") and
         (frames[i + 2] or ""):match("^TRACE ")) then return "trace" end
      if nxt:match("^[%a_]+%.[%a_]+$") then return "ffunc" end
      if nxt == "lj_dispatch_call" then return "dispatch" end
      return "other"
    end
  end
end

local function pct(n, d)
  return d > 0 and ("%5.2f%%"):format(100 * n / d) or "   - "
end

print("Stacks on real programs, " .. rounds ..
      " runs each, LJPROF=cpu:mode=C,interval=1")
for _, p in ipairs(programs) do
  if not exists(p.need) then
    print(("%s: skipped (%s missing: bench/apt-packages)"):format(p.name,
                                                                  p.need))
  else
    local by = {}
    for _, k in ipairs(kinds) do by[k] = { n = 0, unknown = 0, entry = 0 } end
    local states, byshape, lua, stale = {}, {}, 0, 0
    for r = 1, rounds do
      local bin = ("%s/real-%d.bin"):format(work, r)
      os.execute(shell(p, "LJPROF=cpu:mode=C,interval=1,path=" .. bin) ..
                 " >/dev/null")
      local out = capture(ljprof .. " report --format=collapsed " .. bin)
      for line in out:gmatch("[^\n]+") do
        local stack, count = line:match("^(.*) (%d+)$")
        if stack then
          local frames = {}
          for f in (stack .. ";"):gmatch("(.-);") do frames[#frames + 1] = f end
          local b = by[kind(frames)]
          count = tonumber(count)
          b.n = b.n + count
          if stack:find("(line ?)", 1, true) then
            b.unknown = b.unknown + count
            local sh = shape(frames)
            byshape[sh] = (byshape[sh] or 0) + count
          end
          if stack:find(";@") then lua = lua + count end
          for i = 1, #frames - 1 do
            if frames[i]:match("^[%a_]+%.[%a_]+$") and
               (frames[i + 1] == "lj_meta_cat" or
                frames[i + 1] == "lj_func_newL_gc") then
              stale = stale + count
              break
            end
          end
          if entries[frames[1]] then b.entry = b.entry + count end
        end
      end
      local json = capture(ljprof .. " report --format=json " .. bin)
      for st, n in json:match('"vmstate": {([^}]*)}'):gmatch('"(%u+)": (%d+)') do
        states[st] = (states[st] or 0) + tonumber(n)
      end
      -- The JIT report's starts: samples with their outcome known.
      local jit = capture(ljprof .. " report --jit --format=json " .. bin)
      p.compiler = (p.compiler or 0) +
                   tonumber(jit:match('"jit_compiler": (%d+)') or 0)
      p.explained = p.explained or 0
      for _, outcome in ipairs({ "compiled", "aborted" }) do
        for n in jit:gmatch('"samples_' .. outcome .. '": (%d+)') do
          p.explained = p.explained + tonumber(n)
        end
      end
      os.remove(bin)
    end
    local all = { n = 0, unknown = 0, entry = 0 }
    for _, k in ipairs(kinds) do
      for f, v in pairs(by[k]) do all[f] = all[f] + v end
    end
    print(("\n%s (%d samples)"):format(p.name, all.n))
    print(("  %-9s %8s %8s %10s %10s"):format("kind", "samples", "share",
                                             "line ?", "to entry"))
    for _, k in ipairs(kinds) do
      local b = by[k]
      print(("  %-9s %8d %8s %10s %10s"):format(k, b.n, pct(b.n, all.n),
            pct(b.unknown, b.n), pct(b.entry, b.n)))
    end
    print(("  %-9s %8d %8s %10s %10s"):format("all", all.n, "",
          pct(all.unknown, all.n), pct(all.entry, all.n)))
    local sl = {}
    for _, st in ipairs({ "INTERP", "LFUNC", "FFUNC", "CFUNC", "GC", "EXIT",
                          "RECORD", "OPT", "ASM", "TRACE" }) do
      if (states[st] or 0) > 0 then
        sl[#sl + 1] = st .. " " .. pct(states[st], all.n):gsub("^%s+", "")
      end
    end
    print("  VM states: " .. table.concat(sl, ", "))
    local shl = {}
    for _, sh in ipairs(shapes) do
      shl[#shl + 1] = ("%s %d"):format(sh, byshape[sh] or 0)
    end
    print(("  line ? in %s of the %d samples with a Lua frame; by shape: %s")
          :format(pct(all.unknown, lua):gsub("^%s+", ""), lua,
                  table.concat(shl, ", ")))
    print(("  a fast function named that does not run: %d samples")
          :format(stale))
    print(("  compiler samples charged to a start and its outcome: %s of %d")
          :format(pct(p.explained, p.compiler), p.compiler))
  end
end

if os.getenv("REAL_STACKS_ONLY") then os.exit(0) end

-- What the compiler's events cost: interleaved runs of each program
-- plain, under sysprof C at 1 ms without the events and with them.
local function size(path)
  local f = io.open(path, "rb")
  if not f then return 0 end
  local n = f:seek("end")
  f:close()
  return n
end

local function samples(bin)
  return tonumber(capture(ljprof .. " report --format=json " .. bin)
                  :match('"samples": (%d+)') or 0)
end

local order = { "plain", "no_events", "events" }
local rows, streams = {}, {}
for _, p in ipairs(programs) do
  if exists(p.need) then
    local bin = work .. "/real-cost.bin"
    local prof = "LJPROF=cpu:mode=C,interval=1,path=" .. bin
    local cmds = {
      plain = shell(p),
      no_events = shell(p, prof .. ",jit=0"),
      events = shell(p, prof),
    }
    rows[#rows + 1] = { name = p.name,
                        med = harness.compare(cmds, order, 2 * rounds + 1) }
    local per = {}
    for _, v in ipairs({ "no_events", "events" }) do
      os.execute(cmds[v] .. " >/dev/null")
      per[v] = size(bin) / math.max(samples(bin), 1)
    end
    streams[#streams + 1] = ("  %s: %.1f bytes per sample without the " ..
      "events, %.1f with them (the events %.1f%% of the stream)")
      :format(p.name, per.no_events, per.events,
              100 * (1 - per.no_events / per.events))
    os.remove(bin)
  end
end
harness.table("The compiler's events: median wall time of " ..
              (2 * rounds + 1) .. " interleaved runs, sysprof C at 1 ms",
              order, { { "events", "no_events" }, { "events", "plain" } },
              rows)
print("\n" .. table.concat(streams, "\n"))
