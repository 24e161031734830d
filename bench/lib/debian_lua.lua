-- Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
-- Real programs the project did not write, from Debian's Lua packages
-- (bench/apt-packages): where they are installed, the environment that
-- finds their modules, and whether one is there.
local debian_lua = {}

debian_lua.share = "/usr/share/lua/5.1"
debian_lua.env = ("LUA_PATH='%s/?.lua;%s/?/init.lua;;' " ..
                  "LUA_CPATH='/usr/lib/x86_64-linux-gnu/lua/5.1/?.so;;' ")
                 :format(debian_lua.share, debian_lua.share)

function debian_lua.exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

return debian_lua
