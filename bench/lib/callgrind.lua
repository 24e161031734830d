-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- A command's instructions as callgrind counts them: the run's total, and
-- functions' inclusive instructions and calls (callgrind_annotate).
local harness = require("harness")

local callgrind = {}

local function number(s) return tonumber((s:gsub(",", ""))) end

-- Runs `env valgrind ... cmd` (env: assignments, or ""); returns
-- { total, ir = { [fn] = n }, calls = { [fn] = n } } for the functions
-- named, or nil when valgrind gave nothing. out: callgrind's file.
function callgrind.count(env, cmd, fns, out)
  harness.capture(("%s valgrind --tool=callgrind --smc-check=all-non-file " ..
                   "--callgrind-out-file=%s %s >/dev/null 2>&1")
                  :format(env, out, cmd))
  local text = harness.capture(("callgrind_annotate --inclusive=yes " ..
                                "--threshold=100 --show-percs=no %s " ..
                                "2>/dev/null"):format(out))
  os.remove(out)
  local total = text:match("([%d,]+)%s+PROGRAM TOTALS")
  if not total then return nil end
  local r = { total = number(total), ir = {}, calls = {} }
  for _, fn in ipairs(fns or {}) do
    r.ir[fn] = number(text:match("\n%s*([%d,]+)%s+%S*:" .. fn .. " ") or "0")
    local calls = 0
    for n in text:gmatch("=> %S*:" .. fn .. " %(([%d,]+)x%)") do
      calls = calls + number(n)
    end
    r.calls[fn] = calls
  end
  return r
end

return callgrind
