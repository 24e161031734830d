/*
** The misc library: VM metrics (and, later, the profilers) for Lua code.
*/

#define lib_misc_c
#define LUA_LIB

#include "lua.h"
#include "lauxlib.h"
#include "lmisclib.h"

/* -- misc.getmetrics() --------------------------------------------------- */

static void setnum(lua_State *L, const char *name, size_t v)
{
  lua_pushnumber(L, (lua_Number)v);
  lua_setfield(L, -2, name);
}

static int misc_getmetrics(lua_State *L)
{
  struct luam_Metrics m;
  luaM_metrics(L, &m);
  lua_createtable(L, 0, 19);
  setnum(L, "strhash_hit", m.strhash_hit);
  setnum(L, "strhash_miss", m.strhash_miss);
  setnum(L, "gc_strnum", m.gc_strnum);
  setnum(L, "gc_tabnum", m.gc_tabnum);
  setnum(L, "gc_udatanum", m.gc_udatanum);
  setnum(L, "gc_cdatanum", m.gc_cdatanum);
  setnum(L, "gc_total", m.gc_total);
  setnum(L, "gc_freed", m.gc_freed);
  setnum(L, "gc_allocated", m.gc_allocated);
  setnum(L, "gc_steps_pause", m.gc_steps_pause);
  setnum(L, "gc_steps_propagate", m.gc_steps_propagate);
  setnum(L, "gc_steps_atomic", m.gc_steps_atomic);
  setnum(L, "gc_steps_sweepstring", m.gc_steps_sweepstring);
  setnum(L, "gc_steps_sweep", m.gc_steps_sweep);
  setnum(L, "gc_steps_finalize", m.gc_steps_finalize);
  setnum(L, "jit_snap_restore", m.jit_snap_restore);
  setnum(L, "jit_trace_abort", m.jit_trace_abort);
  setnum(L, "jit_mcode_size", m.jit_mcode_size);
  setnum(L, "jit_trace_num", m.jit_trace_num);
  return 1;
}

/* -- Library registration ------------------------------------------------ */

static const luaL_Reg misc_lib[] = {
  { "getmetrics", misc_getmetrics },
  { NULL, NULL }
};

LUALIB_API int luaopen_misc(lua_State *L)
{
  luaL_register(L, LUAM_MISCLIBNAME, misc_lib);
  return 1;
}
