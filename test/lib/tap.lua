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

function tap.done()
  print("1.." .. count)
  os.exit(failed == 0 and 0 or 1)
end

return tap
