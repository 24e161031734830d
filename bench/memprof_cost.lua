-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Where a memprof event's cost goes, counted by
-- callgrind (instructions: the same each run, unlike time on a shared
-- machine): churn, tree and strings (smaller than bench/memprof_steady.lua's
-- runs), each in one process plain, under v4 and with stacks, the profile
-- started before and stopped after the run. Each line of the profiler's
-- source is charged to the function it is in (inlined or not), each call
-- out to what it calls, and these to a part of the event:
--   attribution  where the event comes from (VM state, frames, trace site)
--   stack id     the call stack's id (lj_memstack_id and what it calls)
--   encoding     the header and ULEB128 fields written into the buffer
--   buffer       room in the buffer, its flush, marks
--   thread       the writer thread (on the other core), whole
--   wrapper      the allocator wrapper's own work: its call, spills, the
--                event's kind
-- The VM's own allocator (lj_alloc_f) and the profile's start and stop
-- (the symbol table) are left out; "rest" is the difference between the
-- whole run's instructions over plain, less start and stop, and the
-- parts (the GC's, the JIT's differences between the runs).
-- Usage: luajit bench/memprof_cost.lua WORKDIR
--        (valgrind's callgrind_annotate and the luajit running this)
local work = assert(arg[1], "usage: memprof_cost.lua WORKDIR")
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local luajit = arg[-1]

if work == "--run" then  -- The child: PROGRAM MODE N.
  local chunk = assert(loadfile(dir .. "/programs/" .. arg[2] .. ".lua"))
  local opt = ({ v4 = { path = "/dev/null", format = "v4" },
                 stacks = { path = "/dev/null", stacks = true } })[arg[3]]
  jit.flush()
  collectgarbage()
  if opt then assert(misc.memprof.start(opt)) end
  arg = { arg[4] }
  chunk()
  if opt then assert(misc.memprof.stop()) end
  return
end

local parts = { "attribution", "stack id", "encoding", "buffer", "wrapper",
                "thread" }

-- The part of a function of the profiler, or of a function it calls.
local part_of = {
  memprof_locate = "attribution", memprof_loctrace = "attribution",
  memprof_tracesite = "attribution", memprof_retaddr = "attribution",
  memprof_locfunc = "attribution", memprof_loclua = "attribution",
  memprof_locvm = "attribution", memprof_locjit = "attribution",
  memprof_tracelua = "attribution", memprof_announce = "attribution",
  memprof_emptysites = "attribution", lj_prof_framefunc = "attribution",
  lj_debug_frameline = "attribution", lj_proftrace_frames = "attribution",
  lj_memstack_id = "stack id",
  memprof_event = "encoding", lj_wbuf_uleb = "encoding",
  lj_symtab_newobjs = "encoding",
  lj_wbuf_reserve = "buffer", lj_wbuf_flush = "buffer",
  lj_wbuf_failed = "buffer", memprof_mark = "buffer",
  memprof_writemark = "buffer",
  memprof_allocf = "wrapper", memprof_allocev = "wrapper",
  memprof_write = "wrapper",
}
-- Lines of the event writers that are another part's.
local writers = { memprof_write = true, memprof_written = true,
                  memprof_gcfree = true }
local function line_part(fn, text)
  if not writers[fn] then return part_of[fn] end
  if text:match("lj_wbuf_reserve") then
    return "buffer"
  elseif text:match("lj_wbuf_uleb") or text:match("out%.pos") or
         text:match("%*p%+%+ = ") then
    return "encoding"
  elseif text:match("mark") or text:match("lj_wbuf_failed") then
    return "buffer"
  end
  return "wrapper"
end
local skipped = { lj_alloc_f = true, lj_symtab_dump = true }

local function capture(cmd)
  local f = assert(io.popen(cmd))
  local s = f:read("*a")
  f:close()
  return s
end

local function number(s) return tonumber((s:gsub(",", ""))) end

-- A run under callgrind, a file per thread: their names' common part.
-- MEMPROF_COST_REUSE=1 reads an earlier run's files in WORKDIR again.
local function callgrind(prog, mode, n)
  local out = ("%s/cg.%s.%s"):format(work, prog, mode)
  if os.getenv("MEMPROF_COST_REUSE") then return out end
  os.remove(out .. "-01")
  os.remove(out .. "-02")
  capture(("valgrind --tool=callgrind --dump-instr=yes --separate-threads=yes --callgrind-out-file=%s %s %s --run %s %s %s 2>&1")
          :format(out, luajit, arg[0], prog, mode, n))
  return out
end

-- Instructions by part on the allocating thread (the first), the events
-- (the allocator's calls from the wrapper), start and stop, and the run's
-- total, the writer thread's (the second, if any) with it.
local function breakdown(file)
  local text = capture(("callgrind_annotate --auto=yes --threshold=100 --show-percs=no --context=100000 %s-01 2>/dev/null")
                       :format(file))
  local by, events, startstop = {}, 0, 0
  for _, p in ipairs(parts) do by[p] = 0 end
  local total = number(text:match("([%d,]+)%s+PROGRAM TOTALS"))
  local ours, fn = false, nil
  for line in text:gmatch("[^\n]*") do
    local src = line:match("^%-%- Auto%-annotated source: (.*)$")
    if src then
      ours = src:match("/lj_memprof%.c$") or src:match("/lj_wbuf%.h$") or
             src:match("/lj_profframe%.h$")
      fn = nil
    elseif ours then
      local cost, body = line:match("^%s*([%d,]+)  (.*)$")
      if not cost then body = line:match("^%s*%.  (.*)$") end
      local cfile, callee, calls = (body or ""):match("^%s*=> (%S+):([%w_]+)%S* %(([%d,]+)x%)")
      if callee then
        if callee == "lj_alloc_f" and (fn == "memprof_allocf" or
                                       fn == "memprof_allocev") then
          events = events + number(calls)
        end
        if callee == "lj_symtab_dump" then
          startstop = startstop + number(cost)
        elseif part_of[callee] and not skipped[callee] and
               not cfile:match("/lj_memprof%.c$") then  -- Counted by line.
          by[part_of[callee]] = by[part_of[callee]] + number(cost)
        end
      elseif body then
        local name = body:match("^[%a_][%w_ %*]-([%a_][%w_]*)%(")
        if name and not body:match(";%s*$") and not body:match("^#") then
          fn = name
        end
        local p = cost and fn and line_part(fn, body)
        if p then by[p] = by[p] + number(cost) end
      end
    end
  end
  -- The writer thread, whole.
  local thread = capture(("callgrind_annotate --show-percs=no %s-02 2>/dev/null")
                         :format(file))
                 :match("([%d,]+)%s+PROGRAM TOTALS")
  by.thread = thread and number(thread) or 0
  return by, events, startstop, total + by.thread
end

local programs = { { "alloc_churn", 300000 }, { "alloc_tree", 15 },
                   { "alloc_strings", 100000 } }
print("| program | mode | events | instructions / event over plain | " ..
      "on the allocating thread | " .. table.concat(parts, " | ") ..
      " | rest |")
print("| --- | --- | ---: | ---: | ---: |" .. (" ---: |"):rep(#parts + 1))
for _, p in ipairs(programs) do
  local _, _, _, plain = breakdown(callgrind(p[1], "plain", p[2]))
  for _, mode in ipairs({ "v4", "stacks" }) do
    local by, events, startstop, total = breakdown(callgrind(p[1], mode, p[2]))
    local over = (total - plain - startstop) / events
    local row, sum = {}, 0
    for _, part in ipairs(parts) do
      row[#row + 1] = ("%.1f"):format(by[part] / events)
      sum = sum + by[part] / events
    end
    print(("| %s | %s | %d | %.1f | %.1f | %s | %.1f |"):format(p[1], mode,
          events, over, over - by.thread / events, table.concat(row, " | "),
          over - sum))
  end
end
