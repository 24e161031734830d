-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Heap snapshots of N live objects (arg[1], default 1e6): a table of
-- N/2 small tables, each with a string. Prints the snapshot's bytes per
-- object and the call's CPU time: the process's (os.clock: the VM's
-- thread and the file's writer thread) and the VM thread's own, which is
-- the pause the snapshot records when the thread never waits for a core
-- (a busy machine's pause is longer: bench/heapsnap.sh prints both).
local ffi = require("ffi")
ffi.cdef[[
struct heapsnap_timespec { long sec, nsec; };
int clock_gettime(int clock, struct heapsnap_timespec *ts);
]]
local CLOCK_THREAD_CPUTIME_ID = 3
local ts = ffi.new("struct heapsnap_timespec")
local function thread_cpu()
  ffi.C.clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts)
  return tonumber(ts.sec) + tonumber(ts.nsec) * 1e-9
end

local n = tonumber(arg[1]) or 1e6
local path = arg[2] or "/tmp/heapsnap-bench.bin"
local t = {}
for i = 1, n / 2 do t[i] = { "s" .. i } end
collectgarbage()
local c0, t0 = os.clock(), thread_cpu()
assert(misc.heapsnapshot(path))
local call, thread = os.clock() - c0, thread_cpu() - t0
local f = assert(io.open(path, "rb"))
local size = f:seek("end")
f:close()
print(string.format("objects %d  snapshot %.1f MB  %.1f bytes/object  call %.0f ms  thread %.0f ms",
  n, size / 1e6, size / n, call * 1000, thread * 1000))
