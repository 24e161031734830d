-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A small TAP producer for Lua tests run by prove.
local tap = {}
local count, failed = 0, 0

local function report(pass, name, diag)
  count = count + 1
  if not pass then failed = failed + 1 end
  print(string.format("%s %d - %s", pass and "ok" or "not ok", count, name or ""))
  if not pass and diag then
    for line in tostring(diag):gmatch("[^\n]+") do print("#   " .. line) end
  end
  return pass
end

function tap.ok(cond, name, diag) return report(not not cond, name, diag) end

function tap.is(got, want, name)
  return report(got == want, name,
    string.format("got:  %s\nwant: %s", tostring(got), tostring(want)))
end

-- cmp(a, ">=", b, name): a numeric or string comparison.
local ops = {
  ["=="] = function(a, b) return a == b end, ["~="] = function(a, b) return a ~= b end,
  ["<"] = function(a, b) return a < b end,   ["<="] = function(a, b) return a <= b end,
  [">"] = function(a, b) return a > b end,   [">="] = function(a, b) return a >= b end,
}
function tap.cmp(a, op, b, name)
  return report(ops[op](a, b), name,
    string.format("%s %s %s is false", tostring(a), op, tostring(b)))
end

function tap.like(s, pattern, name)
  return report(type(s) == "string" and s:find(pattern) ~= nil, name,
    string.format("%q\ndoes not match %q", tostring(s), pattern))
end

function tap.diag(msg) print("# " .. tostring(msg)) end

-- How much slower than a quick idle one this machine is: LJPROF_TIME_SCALE
-- (test/lib/LJProf/Pace.pm sets it for what the Perl tests run), 1 without.
function tap.time_scale()
  return math.max(1, tonumber(os.getenv("LJPROF_TIME_SCALE")) or 1)
end

-- Tests wait for what they need, never for a time: tap.waiting(what, want,
-- have, secs) returns more(), true while have() is below want, so that
-- `while more() do work() end` runs until the samples (events, streams)
-- are there at any machine speed. Past secs seconds (scaled) more() raises
-- an error that names what it had. Payloads run by Perl tests use it too.
function tap.waiting(what, want, have, secs)
  local deadline = os.time() + math.ceil(secs * tap.time_scale()) + 1
  return function()
    local got = have()
    if got >= want then return false end
    if os.time() > deadline then
      error(string.format("waited %d s for %d %s: %d",
        math.ceil(secs * tap.time_scale()), want, what, got), 2)
    end
    return true
  end
end

-- The samples of the sysprof profile running, for tap.waiting.
function tap.samples() return misc.sysprof.report().samples end

-- Loads the machine with n busy loops (processes) until stop() is called:
-- for tests of what a loaded machine does.
function tap.load_machine(n)
  local pids = {}
  for i = 1, n do
    local sh = io.popen("sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!")
    pids[i] = sh:read("*n")
    sh:close()
  end
  return function()
    for _, pid in ipairs(pids) do os.execute("kill " .. pid) end
  end
end

function tap.done()
  print("1.." .. count)
  os.exit(failed == 0 and 0 or 1)
end

return tap
