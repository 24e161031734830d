-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- What recording the compiler's events costs in sysprof, counted by
-- callgrind (instructions: time on a shared 2-core machine swings by more
-- than the 2 % to be told apart, and the JIT itself does not do the same
-- work run after run, so two runs' totals differ by more than that too).
-- Within one run under LJPROF=cpu:mode=C,interval=1 (the events on, the
-- default): each event hook's instructions, inclusive (trace started,
-- finished, aborted, blacklisted, flushed, and the exits counted and
-- written at intervals), against the whole run's, with the calls of each.
-- The programs are bench/real.lua's, smaller (valgrind runs them 50 times
-- slower): luacheck on three of Penlight's files, and dkjson with
-- markdown.lua on one round of documents.
-- Usage: luajit bench/jitevents_cost.lua LUAJIT WORKDIR
--        (valgrind's callgrind_annotate; Debian's lua-check, lua-penlight,
--        lua-dkjson, lua-markdown: bench/apt-packages)
local callgrind = require("callgrind")
local debian_lua = require("debian_lua")

local luajit, work = arg[1], arg[2]
assert(luajit and work, "usage: jitevents_cost.lua LUAJIT WORKDIR")
local dir = arg[0]:match("^(.*)/[^/]*$") or "."
os.execute("mkdir -p " .. work)

local share, env, exists = debian_lua.share, debian_lua.env, debian_lua.exists
local programs = {
  { name = "luacheck on pl/a*.lua",
    args = "-e 'require \"luacheck.main\"' " .. share .. "/pl/a*.lua",
    need = share .. "/luacheck/main.lua" },
  { name = "dkjson + markdown.lua",
    args = dir .. "/real/docs.lua 1", need = share .. "/markdown.lua" },
}
local hooks = { "jitstart", "jitstop", "jitabort", "jitblacklist",
                "jitflush", "jitexit" }

-- The run's total and each hook's inclusive instructions and calls.
local function count(p)
  local fns = {}
  for i, h in ipairs(hooks) do fns[i] = "lj_sysprof_" .. h end
  local r = callgrind.count(("%s LJPROF=cpu:mode=C,interval=1,path=%s/jitevents.bin")
                            :format(env, work), luajit .. " " .. p.args, fns,
                            work .. "/cg.jitevents")
  os.remove(work .. "/jitevents.bin")
  if not r then return nil end
  for i, h in ipairs(hooks) do
    r.ir[h], r.calls[h] = r.ir[fns[i]], r.calls[fns[i]]
  end
  return r
end

print("| program | instructions (M) | events' (M) | share | " ..
      table.concat(hooks, " | ") .. " |")
print("| --- | ---: | ---: | ---: |" .. (" ---: |"):rep(#hooks))
for _, p in ipairs(programs) do
  if not exists(p.need) then
    print(("| %s | skipped: no %s |"):format(p.name, p.need))
  else
    local r = count(p)
    if not r then
      print(("| %s | no callgrind output (valgrind missing?) |"):format(p.name))
    else
      local sum, cells = 0, {}
      for _, h in ipairs(hooks) do
        sum = sum + r.ir[h]
        cells[#cells + 1] = r.calls[h] > 0 and
          ("%d × %.0f"):format(r.calls[h], r.ir[h] / r.calls[h]) or "0"
      end
      print(("| %s | %.1f | %.2f | %.2f %% | %s |"):format(p.name,
        r.total / 1e6, sum / 1e6, 100 * sum / r.total,
        table.concat(cells, " | ")))
    end
  end
end
print("\n(each hook: calls × instructions per call, inclusive)")
