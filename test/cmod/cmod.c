/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** A C module for the profiler tests: its functions allocate, and one calls
** back into Lua, so profiles must name C code and nest it between Lua.
*/

#include "lua.h"
#include "lauxlib.h"
#include "lmisclib.h"

/* cmod.alloc(n): n userdata of 100 bytes, in a table. */
int cmod_alloc(lua_State *L)
{
  int i, n = (int)luaL_checkinteger(L, 1);
  lua_createtable(L, n, 0);
  for (i = 1; i <= n; i++) {
    lua_newuserdata(L, 100);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

/* cmod.call(f, ...): calls f from C and returns what it returns. */
int cmod_call(lua_State *L)
{
  luaL_checktype(L, 1, LUA_TFUNCTION);
  lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
  return lua_gettop(L);
}

/* cmod.after(f, n): calls f protected (it may fail), then allocates n
** userdata: what comes after a nested call is the C function's again. */
int cmod_after(lua_State *L)
{
  int i, n = (int)luaL_checkinteger(L, 2);
  lua_pushvalue(L, 1);
  lua_pcall(L, 0, 0, 0);
  lua_createtable(L, n, 0);
  for (i = 1; i <= n; i++) {
    lua_newuserdata(L, 64);
    lua_rawseti(L, -2, i);
  }
  return 1;
}

/* cmod.grow(n): makes room for n values on its stack (the VM may move the
** stack), pushes them and returns how many. */
int cmod_grow(lua_State *L)
{
  int i, n = (int)luaL_checkinteger(L, 1);
  luaL_checkstack(L, n, "cmod.grow");
  for (i = 0; i < n; i++)
    lua_pushinteger(L, i);
  lua_pushinteger(L, lua_gettop(L));
  return 1;
}

/* cmod.spin(n): burns CPU in C for n iterations. */
int cmod_spin(lua_State *L)
{
  volatile double x = 0;
  long i, n = (long)luaL_checknumber(L, 1);
  for (i = 0; i < n; i++)
    x += (double)i * 0.5;
  lua_pushnumber(L, x);
  return 1;
}

/* cmod.newthread(): the labels of a thread lua_newthread makes in a C
** function called from Lua (as ngx.thread.spawn does), as a table. */
int cmod_newthread(lua_State *L)
{
  lua_State *co = lua_newthread(L);
  luaM_label_get(co);
  lua_xmove(co, L, 1);
  return 1;
}

static const luaL_Reg cmod_funcs[] = {
  { "alloc", cmod_alloc },
  { "call", cmod_call },
  { "after", cmod_after },
  { "grow", cmod_grow },
  { "spin", cmod_spin },
  { "newthread", cmod_newthread },
  { NULL, NULL }
};

int luaopen_cmod(lua_State *L)
{
  luaL_register(L, "cmod", cmod_funcs);
  return 1;
}
