-- Heap snapshots of N live objects (arg[1], default 1e6): a table of
-- N/2 small tables, each with a string. Prints the pause the snapshot
-- records, the bytes per object; the reader is timed by bench/README.md's
-- command (ljprof heap under /usr/bin/time).
local n = tonumber(arg[1]) or 1e6
local path = arg[2] or "/tmp/heapsnap-bench.bin"
local t = {}
for i = 1, n / 2 do t[i] = { "s" .. i } end
collectgarbage()
local t0 = os.clock()
assert(misc.heapsnapshot(path))
local wall = os.clock() - t0
local f = assert(io.open(path, "rb"))
local size = f:seek("end")
f:close()
print(string.format("objects %d  snapshot %.1f MB  %.1f bytes/object  call %.0f ms",
  n, size / 1e6, size / n, wall * 1000))
