-- The steady cost of memprof's call stacks and sampling, without the cost
-- of starting a profile (the symbol table, about 50 ms, weighs on the
-- half-second programs of bench/memprof.lua): each program run in one
-- process plain, under v4, with stacks and sampled at 512 KiB, both also
-- with native frames in the stacks, rounds
-- interleaved, the median CPU time (os.clock) of each kept; the profile
-- is started before and stopped after each timed run. The traces are
-- flushed before each run: alloc_tree's recursion traces degrade run after
-- run in one process, profile or not (0.7 s, then 1.0 s, then 2.3 s).
-- Usage: luajit bench/memprof_steady.lua WORKDIR [ROUNDS]
local work = assert(arg[1], "usage: memprof_steady.lua WORKDIR [ROUNDS]")
local rounds = tonumber(arg[2]) or 5
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
local modes = {
  { "plain" },
  { "v4", { path = "/dev/null", format = "v4" } },
  { "stacks", { path = "/dev/null", stacks = true } },
  { "sampled", { path = "/dev/null", sample = 524288 } },
  { "native", { path = "/dev/null", native = true } },
  { "native_sampled", { path = "/dev/null", native = true, sample = 524288 } },
}

local function median(xs)
  table.sort(xs)
  return xs[math.floor((#xs + 1) / 2)]
end

print("| program | plain (s) | v4 / plain | stacks / plain | stacks / v4 | sampled / plain" ..
      " | native / plain | native / stacks | native_sampled / plain |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
for _, p in ipairs({ "alloc_churn", "alloc_tree", "alloc_strings", "alloc_deep" }) do
  local chunk = assert(loadfile(dir .. "/programs/" .. p .. ".lua"))
  local t = {}
  for _, m in ipairs(modes) do t[m[1]] = {} end
  for _ = 1, rounds do
    for _, m in ipairs(modes) do
      collectgarbage()
      jit.flush()
      if m[2] then assert(misc.memprof.start(m[2])) end
      local t0 = os.clock()
      chunk()
      local t1 = os.clock()
      if m[2] then assert(misc.memprof.stop()) end
      table.insert(t[m[1]], t1 - t0)
    end
  end
  local plain, v4 = median(t.plain), median(t.v4)
  local stacks, sampled = median(t.stacks), median(t.sampled)
  local native, native_sampled = median(t.native), median(t.native_sampled)
  print(string.format("| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f |", p,
        plain, v4 / plain, stacks / plain, stacks / v4, sampled / plain,
        native / plain, native / stacks, native_sampled / plain))
end
