-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- What the trace maps cost (the map from a trace's machine code to the
-- bytecode and inlined frames it runs, kept with each trace for the
-- profilers). Size: the traces alive at the end of each of LuaJIT's bench
-- programs, map bytes against machine code bytes. Compile time: the
-- instructions spent compiling traces (callgrind, repeatable on a busy
-- machine: trace_state and all it calls), ours against unpatched
-- upstream, and the share of that in the map's code (lj_proftrace).
-- Usage: luajit bench/traces.lua LUAJIT PRISTINE BENCHDIR WORKDIR
local luajit, pristine, benchdir, work = arg[1], arg[2], arg[3], arg[4]
assert(work, "usage: traces.lua LUAJIT PRISTINE BENCHDIR WORKDIR")
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
if dir:sub(1, 1) ~= "/" then dir = os.getenv("PWD") .. "/" .. dir end  -- we cd
os.execute("mkdir -p " .. work)

local capture = require("harness").capture

print("\n### Map size: traces alive at exit\n")
print("| program | traces | machine code (bytes) | map (bytes) | map / code | median per trace |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
local code_all, map_all = 0, 0
for _, p in ipairs(require("ljbench")) do
  local out = capture(string.format("cd %s && %s %s/lib/traces_run.lua %s.lua %s 2>&1 >/dev/null",
    benchdir, luajit, dir, p[1], p[2]))
  local n, code, map, median = out:match("traces (%d+) code (%d+) map (%d+) median ([%d.]+)")
  assert(n, "no trace line from " .. p[1] .. ": " .. out)
  code_all, map_all = code_all + code, map_all + map
  print(string.format("| %s | %s | %s | %s | %.1f%% | %.1f%% |", p[1], n, code, map,
    100 * map / code, 100 * median))
end
print(string.format("| all | | %d | %d | %.1f%% | |", code_all, map_all, 100 * map_all / code_all))

-- Instructions callgrind counts: the compiler's (inclusive), and the map's
-- own (self, in lj_proftrace.c and what lj_proftrace.h inlines).
local function compile_instructions(vm, cmd)
  local out = work .. "/traces.callgrind"
  capture(string.format("cd %s && valgrind --tool=callgrind --callgrind-out-file=%s %s %s 2>&1",
    benchdir, out, vm, cmd))
  local incl = capture("callgrind_annotate --threshold=100 --inclusive=yes " .. out)
  local compile = incl:match("([%d,]+) %(%s*[%d.]+%%%)%s+%S*lj_trace%.c:trace_state")
  local map = 0
  for n in capture("callgrind_annotate --threshold=100 " .. out):gmatch("([%d,]+) %(%s*[%d.]+%%%)%s+%S*lj_proftrace[^\n]*") do
    map = map + tonumber((n:gsub(",", "")))
  end
  os.remove(out)
  return tonumber((compile:gsub(",", ""))), map
end

print("\n### Compile time: instructions spent compiling traces (callgrind)\n")
print("| program | upstream (M) | ours (M) | ours / upstream | of which the map |")
print("| --- | ---: | ---: | ---: | ---: |")
local cases = {
  { "jit_compile (1000 small loops)", dir .. "/programs/jit_compile.lua 1000" },
  { "ray", "ray.lua 1" }, { "md5", "md5.lua 100" }, { "fasta", "fasta.lua 20000" },
  { "nbody", "nbody.lua 20000" }, { "spectral-norm", "spectral-norm.lua 50" },
}
for _, c in ipairs(cases) do
  local base = compile_instructions(pristine, c[2])
  local ours, map = compile_instructions(luajit, c[2])
  print(string.format("| %s | %.2f | %.2f | %.3f | %.1f%% |", c[1], base / 1e6, ours / 1e6,
    ours / base, 100 * map / ours))
end
