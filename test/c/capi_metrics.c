/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** luaM_metrics(): the C API sees what misc.getmetrics() sees.
*/

#include <string.h>

#include "lua.h"
#include "lualib.h"
#include "lauxlib.h"
#include "lmisclib.h"
#include "tap.h"

static double field(lua_State *L, const char *name)
{
  double v;
  lua_getfield(L, -1, name);
  v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

int main(void)
{
  lua_State *L = luaL_newstate();
  struct luam_Metrics before, after;
  int i;

  luaL_openlibs(L);
  lua_getglobal(L, "misc");
  tap_ok(lua_istable(L, -1), "luaL_openlibs opens the misc library");
  lua_pop(L, 1);

  /* Tables made through the C API are counted exactly. From a collected
  ** heap: opening misc compiles misc.label, whose parser leaves tables. */
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCSTOP, 0);
  luaM_metrics(L, &before);
  for (i = 0; i < 100; i++)
    lua_newtable(L);
  luaM_metrics(L, &after);
  tap_is(after.gc_tabnum - before.gc_tabnum, 100, "100 lua_newtable raise gc_tabnum by 100");
  lua_settop(L, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  luaM_metrics(L, &after);
  tap_is(after.gc_tabnum, before.gc_tabnum, "collecting them restores gc_tabnum");
  tap_ok(after.gc_steps_atomic > before.gc_steps_atomic, "a full collection moves gc_steps_atomic");
  tap_ok(after.gc_freed > before.gc_freed, "a full collection moves gc_freed");

  /* Warm up the JIT, then compare both views of the same VM. */
  if (luaL_dostring(L, "local x = 0 for i = 1, 1000 do if i > 900 then x = x + 2 else x = x + 1 end end "
			"return misc.getmetrics()") != 0) {
    tap_ok(0, lua_tostring(L, -1));
    return tap_done();
  }
  luaM_metrics(L, &after);
  tap_ok(after.jit_trace_num > 0, "the C API sees the hot loop's trace");
  tap_is(after.jit_trace_num, field(L, "jit_trace_num"), "jit_trace_num agrees with Lua");
  tap_is(after.jit_snap_restore, field(L, "jit_snap_restore"), "jit_snap_restore agrees with Lua");
  tap_is(after.jit_trace_abort, field(L, "jit_trace_abort"), "jit_trace_abort agrees with Lua");
  tap_is(after.jit_mcode_size, field(L, "jit_mcode_size"), "jit_mcode_size agrees with Lua");
  tap_is(after.gc_udatanum, field(L, "gc_udatanum"), "gc_udatanum agrees with Lua");
  tap_is(after.gc_cdatanum, field(L, "gc_cdatanum"), "gc_cdatanum agrees with Lua");
  tap_is(after.gc_steps_sweep, field(L, "gc_steps_sweep"), "gc_steps_sweep agrees with Lua");
  /* The only table made since Lua's snapshot is the one it returned. */
  tap_is(after.gc_tabnum, field(L, "gc_tabnum") + 1, "gc_tabnum agrees with Lua (plus its result table)");

  lua_close(L);
  return tap_done();
}
