/*
** Copyright (C) 2026 the ljprof authors. MIT licence: see LICENSE.
** The smallest host of an installed libluajit: runs the Lua file it is
** given. test/setup/install.t builds it from luajit.pc alone and profiles
** it through LJPROF.
*/
#include <stdio.h>

#include <lua.h>
#include <lauxlib.h>
#include <lualib.h>

int main(int argc, char **argv) {
  lua_State *L;
  int status;
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCRIPT\n", argv[0]);
    return 2;
  }
  L = luaL_newstate();
  if (!L) return 1;
  luaL_openlibs(L);
  status = luaL_dofile(L, argv[1]);
  if (status) fprintf(stderr, "%s\n", lua_tostring(L, -1));
  lua_close(L);
  return status ? 1 : 0;
}
