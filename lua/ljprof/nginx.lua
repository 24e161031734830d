-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Labels for nginx's Lua handlers: what each route costs.
--
-- nginx runs each phase handler (rewrite, access, content, ...) of a
-- request in a coroutine of its own, made from the VM's main thread: it
-- starts with no labels, and a label set in one phase does not reach the
-- next. One line at the top of each handler labels it:
--
--   content_by_lua_block {
--     require("ljprof.nginx").route("/api")
--     ...
--   }
--
-- route(name) puts { route = name } in force for the rest of the handler
-- (and the coroutines it spawns); route() names the request's URI path
-- instead (ngx.var.uri), for servers whose paths are few. Each name's set
-- is made once and kept: a switch to it costs what misc.label costs
-- (docs/profilers.md), not a table's interning. Past ROUTES_MAX names,
-- the others share the route "other", so that a path with ids in it does
-- not grow the VM. On a LuaJIT without labels (no misc.label) every call
-- does nothing: the same configuration runs without ljprof.
local label = type(misc) == "table" and misc.label or nil

local M = { ROUTES_MAX = 256 }

local sets, nsets = {}, 0

-- The set object of route name: made, and kept, at its first use.
local function route_set(name)
  local set = sets[name]
  if set == nil then
    if nsets >= M.ROUTES_MAX then
      name = "other"
      set = sets[name]
    end
    if set == nil then
      set = label(label({ route = name }))
      sets[name] = set
      nsets = nsets + 1
    end
  end
  return set
end

function M.route(name)
  if label ~= nil then
    if name == nil then name = ngx.var.uri end
    label(route_set(name))
  end
end

return M
