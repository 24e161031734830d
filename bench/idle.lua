-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- The VM with no profile running against the same tree unpatched, counted
-- in instructions by callgrind: deterministic, so free of this machine's
-- noise, where wall time (bench/vm.lua) swings by more than the patches
-- cost. The programs of bench/programs smaller than bench/vm.lua's (the
-- ratio is the whole run's, start-up included), JIT on and off, each run
-- with LuaJIT's PRNG seeded alike (SEED_SO, bench/probe/fixedseed.c): the
-- counts then repeat exactly, cpu_fib's too. Still, where a block lands
-- changes what the allocator and the JIT's hot counters do: a string of
-- 300 bytes made before alloc_tree moved the unpatched VM's count by 2%,
-- and our VM's startup allocates more than the unpatched one (the misc
-- library). So each pair runs in LAYOUTS heaps (a string made first, of
-- 0, 700, 5000 ... bytes) and the table gives the mean ratio, and range.
-- Usage: luajit bench/idle.lua OUR_LUAJIT UNPATCHED_LUAJIT WORKDIR SEED_SO
--        [LAYOUTS]
local ours, upstream, work, seed = arg[1], arg[2], arg[3], arg[4]
assert(ours and upstream and work and seed,
       "usage: idle.lua OUR_LUAJIT UNPATCHED_LUAJIT WORKDIR SEED_SO [LAYOUTS]")
local pads = { 0, 700, 5000, 300, 2000 }
local layouts = math.min(tonumber(arg[5]) or 3, #pads)
local dir = arg[0]:match("^(.*)/[^/]*$") or "."

local programs = {
  { "alloc_churn", 1000000 }, { "alloc_strings", 200000 },
  { "alloc_tree", 15 }, { "cpu_mandel", 300 }, { "cpu_fib", 31 },
}

-- Instructions of a command, from callgrind's totals. LJPROF unset: no
-- profile may start from the environment.
local function count(cmd, out)
  local ok = os.execute(("env -u LJPROF LD_PRELOAD=%s valgrind --tool=callgrind " ..
                         "--callgrind-out-file=%s %s >/dev/null 2>&1"):format(seed, out, cmd))
  assert(ok == 0 or ok == true, "callgrind failed: " .. cmd)
  local f = assert(io.open(out))
  local text = f:read("*a")
  f:close()
  os.remove(out)
  local n = text:match("\nsummary: (%d+)") or text:match("\ntotals: (%d+)")
  return assert(tonumber(n), "no totals in " .. out)
end

print(("\n### Ours against unpatched, instructions (callgrind), no profile " ..
       "running, mean of %d heap layouts\n"):format(layouts))
print("| program | JIT | unpatched (M) | ours (M) | ours / unpatched | range |")
print("| --- | --- | ---: | ---: | ---: | --- |")
os.execute("mkdir -p " .. work)
for _, mode in ipairs({ { "on", "" }, { "off", "-joff " } }) do
  for _, p in ipairs(programs) do
    local sb, sn, lo, hi = 0, 0, math.huge, 0
    for l = 1, layouts do
      local pad = pads[l] > 0 and ("-e \"P=('.'):rep(%d)\" "):format(pads[l]) or ""
      local script = ("%s%s%s/programs/%s.lua %d"):format(mode[2], pad, dir, p[1], p[2])
      local base = count(upstream .. " " .. script, work .. "/idle.cg")
      local n = count(ours .. " " .. script, work .. "/idle.cg")
      sb, sn = sb + base, sn + n
      lo, hi = math.min(lo, n / base), math.max(hi, n / base)
    end
    print(("| %s | %s | %.1f | %.1f | %.4f | %.4f-%.4f |"):format(p[1], mode[1],
          sb / layouts / 1e6, sn / layouts / 1e6, sn / sb, lo, hi))
    io.stdout:flush()
  end
end
